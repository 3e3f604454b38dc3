using System.Runtime.InteropServices;
using Google.Protobuf;
using Hyder.Server.Engine;
using V1 = Hyder.Api.V1;
using TreeIsolation = Hyder.Tree.IsolationLevel;

namespace Hyder.Server.Grpc;

/// <summary>
/// Checks requests against <see cref="EngineLimits"/> and maps messages to engine types and back.
/// Every refusal is an <see cref="EngineException"/> with <see cref="EngineErrorCode.InvalidArgument"/>
/// and a reason that names the field, thrown before anything reaches the engine.
/// </summary>
internal static class Messages
{
    public static TreeIsolation ToEngine(V1.IsolationLevel isolation) => isolation switch
    {
        V1.IsolationLevel.Serializable => TreeIsolation.Serializable,
        V1.IsolationLevel.RepeatableRead => TreeIsolation.RepeatableRead,
        V1.IsolationLevel.SnapshotIsolation => TreeIsolation.SnapshotIsolation,
        V1.IsolationLevel.ReadCommitted => TreeIsolation.ReadCommitted,
        _ => throw Invalid($"unknown isolation level {(int)isolation}"),
    };

    public static IReadOnlyList<Operation> ToEngine(IList<V1.Operation> operations, EngineLimits limits)
    {
        if (operations.Count == 0)
        {
            throw Invalid("a transaction needs at least one operation");
        }

        if (operations.Count > limits.MaxOperations)
        {
            throw Invalid($"{operations.Count} operations exceed the limit of {limits.MaxOperations}");
        }

        var result = new Operation[operations.Count];
        for (var i = 0; i < result.Length; i++)
        {
            result[i] = ToEngine(operations[i], limits, new Field("operations", i));
        }

        return result;
    }

    public static Operation ToEngine(V1.Operation operation, EngineLimits limits, Field name)
    {
        switch (operation.Kind)
        {
            case V1.OperationKind.Get:
                return Operation.Get(Key(operation.Key, limits, name.Member("key")));
            case V1.OperationKind.Delete:
                return Operation.Delete(Key(operation.Key, limits, name.Member("key")));
            case V1.OperationKind.Put:
                return Operation.Put(Key(operation.Key, limits, name.Member("key")), Payload(operation.Value, limits, name.Member("value")));
            case V1.OperationKind.Add:
                if (operation.HasMin && operation.HasMax && operation.Min > operation.Max)
                {
                    throw Invalid($"{name}: an ADD's bounds [{operation.Min}, {operation.Max}] are empty (min > max)");
                }

                return Operation.Add(Key(operation.Key, limits, name.Member("key")), operation.Delta, operation.HasMin ? operation.Min : null, operation.HasMax ? operation.Max : null);
            case V1.OperationKind.Max:
                return Operation.MaxOf(Key(operation.Key, limits, name.Member("key")), operation.Delta);
            case V1.OperationKind.Min:
                return Operation.MinOf(Key(operation.Key, limits, name.Member("key")), operation.Delta);
            case V1.OperationKind.Oput:
                return Operation.OPut(Key(operation.Key, limits, name.Member("key")), operation.Order, Payload(operation.Value, limits, name.Member("value")));
            case V1.OperationKind.TopKInsert:
                if (operation.K < 1 || operation.K > limits.MaxTopK)
                {
                    throw Invalid($"{name.Member("k")} is {operation.K}; a TOP_K_INSERT's k must be 1 to {limits.MaxTopK}");
                }

                return Operation.TopKInsert(Key(operation.Key, limits, name.Member("key")), operation.K, operation.Order, Payload(operation.Value, limits, name.Member("value")));
            case V1.OperationKind.Scan:
                var low = Bound(operation.Key, limits, name.Member("key")) ?? [];
                var high = Bound(operation.End, limits, name.Member("end"));
                return Operation.Scan(low, high, Limit(operation.Limit, limits.MaxScanRows, name.Member("limit")));
            default:
                throw Invalid($"{name.Member("kind")}: unknown operation kind {(int)operation.Kind}");
        }
    }

    public static byte[] Key(ByteString key, EngineLimits limits, Field name)
    {
        if (key.IsEmpty)
        {
            throw Invalid($"{name} is empty; keys must not be");
        }

        if (key.Length > limits.MaxKeyBytes)
        {
            throw Invalid($"{name} is {key.Length} bytes, over the limit of {limits.MaxKeyBytes}");
        }

        return Bytes(key);
    }

    public static byte[] Payload(ByteString value, EngineLimits limits, Field name) =>
        value.Length > limits.MaxValueBytes
            ? throw Invalid($"{name} is {value.Length} bytes, over the limit of {limits.MaxValueBytes}")
            : Bytes(value);

    /// <summary>A scan bound: null when empty (unbounded).</summary>
    public static byte[]? Bound(ByteString bound, EngineLimits limits, Field name)
    {
        if (bound.Length > limits.MaxKeyBytes)
        {
            throw Invalid($"{name} is {bound.Length} bytes, over the limit of {limits.MaxKeyBytes}");
        }

        return bound.IsEmpty ? null : Bytes(bound);
    }

    /// <summary>
    /// A request field's bytes for the engine to keep. The parser gives every bytes field an array
    /// of its own (it copies out of Kestrel's pooled buffers), and the request is dropped after the
    /// call, so that array is handed over as it is; a copy is made only where it is not a whole array.
    /// </summary>
    private static byte[] Bytes(ByteString bytes) =>
        MemoryMarshal.TryGetArray(bytes.Memory, out var segment) && segment.Offset == 0 && segment.Array!.Length == segment.Count
            ? segment.Array
            : bytes.ToByteArray();

    public static int Limit(int limit, int max, Field name) =>
        limit < 0 ? throw Invalid($"{name} is negative ({limit})")
        : limit > max ? throw Invalid($"{name} {limit} is over the limit of {max}")
        : limit;

    public static V1.Outcome ToMessage(TransactionOutcome outcome) => new()
    {
        Status = outcome.Status switch
        {
            TransactionStatus.Committed => V1.TransactionStatus.Committed,
            TransactionStatus.Aborted => V1.TransactionStatus.Aborted,
            _ => V1.TransactionStatus.OutcomeUnknown,
        },

        // hyder.proto numbers AbortCause as Hyder.Tree.Meld.AbortCause does.
        AbortCause = (V1.AbortCause)(int)outcome.Cause,
        Detail = outcome.Detail ?? string.Empty,
        Ordinal = outcome.Ordinal,
        SnapshotSequence = outcome.SnapshotSequence,
    };

    /// <summary>Sets a (reused) outcome message to an engine's outcome.</summary>
    public static void Fill(V1.Outcome message, TransactionOutcome outcome)
    {
        message.Status = outcome.Status switch
        {
            TransactionStatus.Committed => V1.TransactionStatus.Committed,
            TransactionStatus.Aborted => V1.TransactionStatus.Aborted,
            _ => V1.TransactionStatus.OutcomeUnknown,
        };
        message.AbortCause = (V1.AbortCause)(int)outcome.Cause;
        message.Detail = outcome.Detail ?? string.Empty;
        message.Ordinal = outcome.Ordinal;
        message.SnapshotSequence = outcome.SnapshotSequence;
    }

    public static V1.OperationResult ToMessage(OperationResult result)
    {
        var message = new V1.OperationResult();
        Fill(message, result);
        return message;
    }

    /// <summary>Sets a (reused, cleared) result message to an engine's result; returns the bytes of the values it refers to.</summary>
    public static int Fill(V1.OperationResult message, OperationResult result)
    {
        message.Found = result.Found;
        var bytes = 0;
        if (result.Value is { } value)
        {
            message.Value = Wrap(value);
            bytes += value.Length;
        }

        if (result.Rows is { } rows)
        {
            foreach (var row in rows)
            {
                message.Rows.Add(ToRow(row));
                bytes += row.Key.Length + row.Value.Length;
            }
        }

        return bytes;
    }

    /// <summary>Empties a result message for reuse (and drops its references to the engine's arrays).</summary>
    public static void Clear(V1.OperationResult message)
    {
        message.Found = false;
        message.Value = ByteString.Empty;
        message.Rows.Clear();
    }

    public static V1.Row ToRow(KeyValuePair<byte[], byte[]> row) =>
        new() { Key = Wrap(row.Key), Value = Wrap(row.Value) };

    /// <summary>
    /// An engine's key or payload in a response, without a copy: payloads are never changed once
    /// written (a tree node is immutable once reachable, and a write replaces the array, never
    /// fills it), and the response is serialized before the call returns.
    /// </summary>
    private static ByteString Wrap(byte[] bytes) => UnsafeByteOperations.UnsafeWrap(bytes);

    public static EngineException Invalid(string reason) => new(EngineErrorCode.InvalidArgument, reason);

    /// <summary>
    /// A request field as refusals name it (<c>operations[3].key</c>, <c>operation.value</c>, <c>low</c>):
    /// kept as its parts and formatted only when a request is refused, so a request that passes its
    /// checks builds no strings.
    /// </summary>
    /// <param name="Name">The field (or the list the field is an element of).</param>
    /// <param name="Index">The element of the list; -1 for a field that is no list element.</param>
    /// <param name="Child">The member of the field or element; null for the field itself.</param>
    internal readonly record struct Field(string Name, int Index = -1, string? Child = null)
    {
        public static implicit operator Field(string name) => new(name);

        /// <summary>A member of this field: <c>operations[3]</c> and <c>key</c> make <c>operations[3].key</c>.</summary>
        public Field Member(string child) => this with { Child = child };

        public override string ToString() => (Index, Child) switch
        {
            ( < 0, null) => Name,
            ( < 0, _) => $"{Name}.{Child}",
            (_, null) => $"{Name}[{Index}]",
            _ => $"{Name}[{Index}].{Child}",
        };
    }
}
