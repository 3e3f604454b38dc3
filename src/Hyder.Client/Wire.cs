using System.Runtime.InteropServices;
using Google.Protobuf;
using Grpc.Core;
using V1 = Hyder.Api.V1;

namespace Hyder.Client;

/// <summary>Maps the client's types to hyder.proto's messages and failures to typed exceptions.</summary>
internal static class Wire
{
    private static readonly IReadOnlyList<KeyValuePair<byte[], byte[]>> s_noRows = [];

    public static V1.IsolationLevel ToMessage(IsolationLevel isolation) => isolation switch
    {
        IsolationLevel.Serializable => V1.IsolationLevel.Serializable,
        IsolationLevel.RepeatableRead => V1.IsolationLevel.RepeatableRead,
        IsolationLevel.SnapshotIsolation => V1.IsolationLevel.SnapshotIsolation,
        IsolationLevel.ReadCommitted => V1.IsolationLevel.ReadCommitted,
        _ => throw new ArgumentOutOfRangeException(nameof(isolation), isolation, "Unknown isolation level."),
    };

    /// <summary>An operation as a message.</summary>
    /// <param name="operation">The operation.</param>
    /// <param name="borrow">
    /// Refer to the operation's arrays instead of copying them: only where the caller is told the
    /// arrays must not change until the call completes (<see cref="HyderClient.ExecuteAsync"/>).
    /// </param>
    /// <returns>The message.</returns>
    public static V1.Operation ToMessage(in HyderOperation operation, bool borrow = false)
    {
        var message = new V1.Operation
        {
            Kind = operation.Kind switch
            {
                HyderOperationKind.Get => V1.OperationKind.Get,
                HyderOperationKind.Put => V1.OperationKind.Put,
                HyderOperationKind.Delete => V1.OperationKind.Delete,
                HyderOperationKind.Scan => V1.OperationKind.Scan,
                HyderOperationKind.Add => V1.OperationKind.Add,
                HyderOperationKind.Max => V1.OperationKind.Max,
                HyderOperationKind.Min => V1.OperationKind.Min,
                HyderOperationKind.OPut => V1.OperationKind.Oput,
                HyderOperationKind.TopKInsert => V1.OperationKind.TopKInsert,
                _ => throw new ArgumentOutOfRangeException(nameof(operation), operation.Kind, "Unknown operation kind."),
            },
            Limit = operation.Limit,
            Delta = operation.Delta,
            Order = operation.Order,
            K = operation.K,
        };
        if (operation.MinBound is { } min)
        {
            message.Min = min;
        }

        if (operation.MaxBound is { } max)
        {
            message.Max = max;
        }

        message.Key = borrow ? Borrow(operation.Key) : Bytes(operation.Key);
        message.Value = borrow ? Borrow(operation.Value) : Bytes(operation.Value);
        message.End = borrow ? Borrow(operation.End) : Bytes(operation.End);
        return message;
    }

    public static ByteString Bytes(byte[]? bytes) => bytes is null || bytes.Length == 0 ? ByteString.Empty : ByteString.CopyFrom(bytes);

    /// <summary>The caller's array in a request without a copy; the caller keeps it unchanged until the call completes.</summary>
    public static ByteString Borrow(byte[]? bytes) => bytes is null || bytes.Length == 0 ? ByteString.Empty : UnsafeByteOperations.UnsafeWrap(bytes);

    /// <summary>
    /// A response field's bytes for the caller to keep. The parser gives every bytes field an array
    /// of its own and no response message outlives the call that read it, so that array is handed
    /// over as it is; a copy is made only where it is not a whole array.
    /// </summary>
    public static byte[] Take(ByteString bytes) =>
        MemoryMarshal.TryGetArray(bytes.Memory, out var segment) && segment.Offset == 0 && segment.Array!.Length == segment.Count
            ? segment.Array
            : bytes.ToByteArray();

    public static HyderOperationResult FromMessage(V1.OperationResult result) => new(
        result.Found,
        result.Found ? Take(result.Value) : null,
        result.Rows.Count == 0 ? s_noRows : Rows(result.Rows));

    public static KeyValuePair<byte[], byte[]>[] Rows(IList<V1.Row> rows)
    {
        var result = new KeyValuePair<byte[], byte[]>[rows.Count];
        for (var i = 0; i < result.Length; i++)
        {
            result[i] = new(Take(rows[i].Key), Take(rows[i].Value));
        }

        return result;
    }

    /// <summary>Throws unless the outcome is a commit.</summary>
    public static void EnsureCommitted(V1.Outcome? outcome)
    {
        switch (outcome?.Status)
        {
            case V1.TransactionStatus.Committed:
                return;
            case V1.TransactionStatus.Aborted:
                throw FromMessage(outcome.AbortCause) switch
                {
                    AbortCause.BoundViolated => new BoundViolatedException(outcome.Detail, outcome.Ordinal, outcome.SnapshotSequence),
                    AbortCause.TypeMismatch => new TypeMismatchException(outcome.Detail, outcome.Ordinal, outcome.SnapshotSequence),
                    var cause => new TransactionAbortedException(cause, outcome.Detail, outcome.Ordinal, outcome.SnapshotSequence),
                };
            case V1.TransactionStatus.OutcomeUnknown:
                throw new TransactionOutcomeUnknownException(outcome.Detail, outcome.Ordinal);
            default:
                throw new HyderException(StatusCode.Internal, "The server's answer has no transaction outcome.");
        }
    }

    public static AbortCause FromMessage(V1.AbortCause cause) =>
        Enum.IsDefined((AbortCause)(int)cause) ? (AbortCause)(int)cause : AbortCause.None;

    /// <summary>The exception a failed call surfaces as: cancellation by the caller's token, or a typed failure.</summary>
    public static Exception Translate(RpcException e, CancellationToken cancellationToken) =>
        cancellationToken.IsCancellationRequested
            ? new OperationCanceledException("The call was cancelled.", e, cancellationToken)
            : new HyderException(StatusCodeOf(e), e.Status.Detail, e);

    /// <summary>
    /// The call's status code, with a connection that could not be made or kept (a refused TLS
    /// handshake, a reset, cleartext to a TLS port) as UNAVAILABLE, as gRPC specifies and other
    /// clients report it; Grpc.Net.Client reports some of those as INTERNAL.
    /// </summary>
    public static StatusCode StatusCodeOf(RpcException e)
    {
        if (e.StatusCode != StatusCode.Internal)
        {
            return e.StatusCode;
        }

        for (var inner = e.Status.DebugException; inner is not null; inner = inner.InnerException)
        {
            if (inner is HttpRequestException or IOException or System.Security.Authentication.AuthenticationException or System.Net.Sockets.SocketException)
            {
                return StatusCode.Unavailable;
            }
        }

        return e.StatusCode;
    }
}
