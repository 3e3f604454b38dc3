using System.Buffers.Binary;
using System.Runtime.InteropServices;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Targets.Hyder;

/// <summary>
/// A session on a Hyder transaction server, embedded or remote: the YCSB operations expressed with
/// Hyder's four (get, put, delete, scan) on one interactive transaction. Hyder has one key space,
/// so each YCSB key space is a prefix (<see cref="HyderKeys"/>). Insert is a get and, when the key is
/// absent, a put; Add is a read-modify-write, so a hot counter conflicts as it does under plain
/// optimistic concurrency, unless the target sends Hyder's commutative Add (docs/doppel.md).
/// </summary>
internal abstract class HyderSession : ITargetSession
{
    /// <summary>Starts an interactive transaction (a previous one is abandoned).</summary>
    public abstract ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken);

    public abstract ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken);

    public abstract ValueTask RollbackAsync(CancellationToken cancellationToken);

    public abstract ValueTask DisposeAsync();

    /// <summary>Every Hyder target runs one-shot transactions (the engine's and the service's Execute).</summary>
    public bool CanRunOneShot => true;

    public ValueTask<OneShotOutcome> RunOneShotAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken) =>
        ExecuteOneShotAsync(isolation, Encode(operations, borrowValues: ReadsValuesOnlyDuringTheCall), cancellationToken);

    /// <summary>Whether the session pipelines interactive transactions (the remote target's: each operation is a round trip).</summary>
    public virtual bool CanPipeline => false;

    public ValueTask<OneShotOutcome> RunPipelinedAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken) =>
        ExecutePipelinedAsync(isolation, Encode(operations, borrowValues: ReadsValuesOnlyDuringTheCall), cancellationToken);

    /// <summary>The driver's value buffer itself when the call only reads it while it runs, else a copy of its own.</summary>
    private static byte[] Value(ReadOnlyMemory<byte> value, bool borrow) =>
        borrow && MemoryMarshal.TryGetArray(value, out var segment) && segment.Offset == 0 && segment.Count == segment.Array!.Length
            ? segment.Array
            : value.ToArray();

    public async ValueTask<bool> GetAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) =>
        await GetValueAsync(HyderKeys.Encode(space, key.Span), cancellationToken).ConfigureAwait(false) is not null;

    public async ValueTask<long?> ReadCounterAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) =>
        await GetValueAsync(HyderKeys.Encode(space, key.Span), cancellationToken).ConfigureAwait(false) is { } value ? DecodeCounter(value) : null;

    public ValueTask PutAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken) =>
        PutValueAsync(HyderKeys.Encode(space, key.Span), Value(value, borrow: ReadsValuesOnlyDuringTheCall), cancellationToken);

    public async ValueTask<bool> InsertAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken)
    {
        var k = HyderKeys.Encode(space, key.Span);
        if (await GetValueAsync(k, cancellationToken).ConfigureAwait(false) is not null)
        {
            return false;
        }

        await PutValueAsync(k, value.ToArray(), cancellationToken).ConfigureAwait(false);
        return true;
    }

    public ValueTask<bool> DeleteAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) =>
        DeleteKeyAsync(HyderKeys.Encode(space, key.Span), cancellationToken);

    public ValueTask<int> ScanAsync(KeySpace space, ReadOnlyMemory<byte> startKey, int limit, CancellationToken cancellationToken) =>
        ScanRangeAsync(HyderKeys.Encode(space, startKey.Span), HyderKeys.End(space), limit, cancellationToken);

    public ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, CancellationToken cancellationToken) =>
        AddAsync(space, key, delta, null, null, cancellationToken);

    /// <summary>
    /// Adds to a counter as a read-modify-write: a read of the counter and a write of the result,
    /// which conflicts like any other. A result outside [min, max] on the value read ends the
    /// transaction with BoundViolated before it writes anything: the turn-down is what the
    /// transaction's snapshot showed, a consistent state, as a read-only transaction's answer is.
    /// Targets override it to send Hyder's commutative Add instead, checked where it lands in the log.
    /// </summary>
    public virtual async ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, long? min, long? max, CancellationToken cancellationToken)
    {
        var k = HyderKeys.Encode(space, key.Span);
        var current = await GetValueAsync(k, cancellationToken).ConfigureAwait(false) is { } value ? DecodeCounter(value) : 0;
        var result = (Int128)current + delta;
        if (result < (min ?? long.MinValue) || result > (max ?? long.MaxValue))
        {
            throw new TransactionAbortedException(Metrics.AbortCause.BoundViolated, $"{current} + {delta} leaves [{min}, {max}]", null);
        }

        var next = new byte[sizeof(long)];
        BinaryPrimitives.WriteInt64LittleEndian(next, (long)result);
        await PutValueAsync(k, next, cancellationToken).ConfigureAwait(false);
    }

    /// <summary>
    /// Whether <see cref="ExecuteOneShotAsync"/>, <see cref="ExecutePipelinedAsync"/> and
    /// <see cref="PutValueAsync"/> only read the values while they run (a remote call serializes
    /// them; a remote put copies its value into the request when it is called; a server that
    /// recycles values copies each one it writes), so the driver's own buffers go as they are;
    /// otherwise (the engine keeps them in its tree) each value is a copy of its own.
    /// </summary>
    protected virtual bool ReadsValuesOnlyDuringTheCall => false;


    /// <summary>A one-shot transaction: a get of each key without a value, a put of each with one; the session's to keep unless <see cref="ReadsValuesOnlyDuringTheCall"/>.</summary>
    protected abstract ValueTask<OneShotOutcome> ExecuteOneShotAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken);

    /// <summary>A pipelined interactive transaction of gets (no value) and puts; the session's to keep unless <see cref="ReadsValuesOnlyDuringTheCall"/>.</summary>
    protected virtual ValueTask<OneShotOutcome> ExecutePipelinedAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken) =>
        throw new NotSupportedException("this session does not pipeline interactive transactions");

    /// <summary>A key's value in the open transaction, or null.</summary>
    protected abstract ValueTask<byte[]?> GetValueAsync(byte[] key, CancellationToken cancellationToken);

    /// <summary>Writes a key in the open transaction; <paramref name="value"/> is the session's to give away.</summary>
    protected abstract ValueTask PutValueAsync(byte[] key, byte[] value, CancellationToken cancellationToken);

    /// <summary>Deletes a key in the open transaction; true when it existed.</summary>
    protected abstract ValueTask<bool> DeleteKeyAsync(byte[] key, CancellationToken cancellationToken);

    /// <summary>Scans [low, high) in the open transaction; returns the rows seen.</summary>
    protected abstract ValueTask<int> ScanRangeAsync(byte[] low, byte[] high, int limit, CancellationToken cancellationToken);

    private static (byte[] Key, byte[]? Value)[] Encode(IReadOnlyList<OneShotOperation> operations, bool borrowValues)
    {
        var encoded = new (byte[] Key, byte[]? Value)[operations.Count];
        for (var i = 0; i < encoded.Length; i++)
        {
            var operation = operations[i];
            encoded[i] = (HyderKeys.Encode(operation.Space, operation.Key.Span), operation.Value is { } value ? Value(value, borrowValues) : null);
        }

        return encoded;
    }

    /// <summary>A counter's value: 8 bytes little-endian (what loads and Add write).</summary>
    protected static long DecodeCounter(byte[] value) =>
        value.Length == sizeof(long)
            ? BinaryPrimitives.ReadInt64LittleEndian(value)
            : throw new InvalidDataException($"a counter holds {value.Length} bytes, not 8: the key space was written by something else.");
}

/// <summary>How YCSB key spaces share Hyder's one ordered key space: a one-byte prefix, the key space's id.</summary>
internal static class HyderKeys
{
    public static byte[] Encode(KeySpace space, ReadOnlySpan<byte> key)
    {
        var bytes = new byte[key.Length + 1];
        bytes[0] = Prefix(space);
        key.CopyTo(bytes.AsSpan(1));
        return bytes;
    }

    /// <summary>The first key after the key space (a scan's exclusive end).</summary>
    public static byte[] End(KeySpace space) => [(byte)(Prefix(space) + 1)];

    /// <summary>The key space's own first key.</summary>
    public static byte[] Start(KeySpace space) => [Prefix(space)];

    private static byte Prefix(KeySpace space) =>
        space.Id is >= 0 and < byte.MaxValue ? (byte)space.Id : throw new ArgumentOutOfRangeException(nameof(space), space.Id, "at most 255 key spaces");
}
