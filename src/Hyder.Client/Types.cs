namespace Hyder.Client;

/// <summary>Isolation levels, chosen per transaction (docs/api.md; docs/meld.md gives the conflict rules).</summary>
public enum IsolationLevel
{
    /// <summary>Reads, absent-key reads and scanned ranges are checked at commit; write-write too.</summary>
    Serializable = 0,

    /// <summary>Reads of present keys are checked, no phantom protection; write-write checked.</summary>
    RepeatableRead = 1,

    /// <summary>No read set: write-write conflicts only.</summary>
    SnapshotIsolation = 2,

    /// <summary>No read set and blind writes: puts and deletes never abort.</summary>
    ReadCommitted = 3,
}

/// <summary>Why a transaction aborted.</summary>
public enum AbortCause
{
    /// <summary>No conflict: the client aborted, or the cause is not one the server names.</summary>
    None = 0,

    /// <summary>It wrote a key another transaction changed after its snapshot.</summary>
    WriteWrite = 1,

    /// <summary>It read a key another transaction changed (or deleted) after its snapshot.</summary>
    ReadWrite = 2,

    /// <summary>A key in a range it scanned (or a key it found absent) was inserted, changed or deleted.</summary>
    Phantom = 3,

    /// <summary>It deleted a key another transaction changed or deleted.</summary>
    DeleteConflict = 4,

    /// <summary>The server rejected its intention as malformed.</summary>
    Rejected = 5,

    /// <summary>Group meld: it depended on a key the other intention of its pair wrote.</summary>
    GroupConflict = 6,

    /// <summary>Group meld: the pair depended on different versions of one key, so both aborted.</summary>
    FateShared = 7,

    /// <summary>The snapshot was further behind than the cluster keeps states; retry on a newer one.</summary>
    SnapshotTooOld = 8,

    /// <summary>The snapshot preceded a checkpoint barrier written meanwhile; retry.</summary>
    SnapshotBeforeCheckpoint = 9,

    /// <summary>A bounded Add would have left its [min, max] where the transaction landed in the log.</summary>
    BoundViolated = 10,

    /// <summary>A commutative operation met a value of another type (not an 8-byte integer, ordered value or top-k list).</summary>
    TypeMismatch = 11,

    /// <summary>The transaction read or wrote a key split in the current phase and already changed in it (docs/doppel.md); retryable.</summary>
    SplitPhase = 12,
}

/// <summary>What an operation of a one-shot transaction does.</summary>
public enum HyderOperationKind
{
    /// <summary>Read one key.</summary>
    Get = 0,

    /// <summary>Insert or update one key.</summary>
    Put = 1,

    /// <summary>Delete one key.</summary>
    Delete = 2,

    /// <summary>Read a range of keys.</summary>
    Scan = 3,

    /// <summary>Add to an 8-byte little-endian counter, optionally within [min, max]; commutative (docs/doppel.md).</summary>
    Add = 4,

    /// <summary>Keep the larger of the counter and the operand; commutative.</summary>
    Max = 5,

    /// <summary>Keep the smaller of the counter and the operand; commutative.</summary>
    Min = 6,

    /// <summary>Ordered put: keep (order, value) when its order is the highest; commutative.</summary>
    OPut = 7,

    /// <summary>Insert (order, value) into a list of the k highest orders; commutative.</summary>
    TopKInsert = 8,
}

/// <summary>One operation of a one-shot transaction (<see cref="HyderClient.ExecuteAsync"/>).</summary>
/// <param name="Kind">What it does.</param>
/// <param name="Key">The key; a scan's inclusive low bound (null or empty: unbounded).</param>
/// <param name="Value">A put's, OPut's or TopKInsert's payload.</param>
/// <param name="End">A scan's exclusive high bound (null: unbounded).</param>
/// <param name="Limit">A scan's row limit (0: the server's maximum).</param>
/// <param name="Delta">An Add's amount; a Max's or Min's operand.</param>
/// <param name="MinBound">An Add's lower bound (null: none).</param>
/// <param name="MaxBound">An Add's upper bound (null: none).</param>
/// <param name="Order">An OPut's or TopKInsert's order.</param>
/// <param name="K">A TopKInsert's list length (1 to the server's MaxTopK, at most 1024).</param>
public readonly record struct HyderOperation(
    HyderOperationKind Kind,
    byte[]? Key,
    byte[]? Value = null,
    byte[]? End = null,
    int Limit = 0,
    long Delta = 0,
    long? MinBound = null,
    long? MaxBound = null,
    long Order = 0,
    int K = 0)
{
    /// <summary>A get.</summary>
    /// <param name="key">The key.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Get(byte[] key) => new(HyderOperationKind.Get, key);

    /// <summary>A put (insert or update).</summary>
    /// <param name="key">The key.</param>
    /// <param name="value">The payload.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Put(byte[] key, byte[] value) => new(HyderOperationKind.Put, key, value);

    /// <summary>A delete.</summary>
    /// <param name="key">The key.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Delete(byte[] key) => new(HyderOperationKind.Delete, key);

    /// <summary>A scan of [low, high).</summary>
    /// <param name="low">Inclusive low bound (null: unbounded).</param>
    /// <param name="high">Exclusive high bound (null: unbounded).</param>
    /// <param name="limit">Most rows (0: the server's maximum).</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Scan(byte[]? low, byte[]? high, int limit = 0) => new(HyderOperationKind.Scan, low, End: high, Limit: limit);

    /// <summary>
    /// A commutative add to the 8-byte little-endian counter at <paramref name="key"/> (absent: 0).
    /// With bounds, the result must lie in [<paramref name="min"/>, <paramref name="max"/>] where the
    /// transaction lands in the log, else it aborts with <see cref="BoundViolatedException"/>.
    /// </summary>
    /// <param name="key">The key.</param>
    /// <param name="delta">The amount.</param>
    /// <param name="min">The lowest result allowed (null: none).</param>
    /// <param name="max">The highest result allowed (null: none).</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Add(byte[] key, long delta, long? min = null, long? max = null) => new(HyderOperationKind.Add, key, Delta: delta, MinBound: min, MaxBound: max);

    /// <summary>Keeps the larger of the counter at <paramref name="key"/> and <paramref name="value"/> (absent: the value).</summary>
    /// <param name="key">The key.</param>
    /// <param name="value">The operand.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Max(byte[] key, long value) => new(HyderOperationKind.Max, key, Delta: value);

    /// <summary>Keeps the smaller of the counter at <paramref name="key"/> and <paramref name="value"/> (absent: the value).</summary>
    /// <param name="key">The key.</param>
    /// <param name="value">The operand.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation Min(byte[] key, long value) => new(HyderOperationKind.Min, key, Delta: value);

    /// <summary>An ordered put: the key keeps (order, value) with the highest order (ties: the larger value, ordinal).</summary>
    /// <param name="key">The key.</param>
    /// <param name="order">The order.</param>
    /// <param name="value">The payload.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation OPut(byte[] key, long order, byte[] value) => new(HyderOperationKind.OPut, key, value, Order: order);

    /// <summary>Inserts (order, value) into the list at <paramref name="key"/> of the <paramref name="k"/> highest orders.</summary>
    /// <param name="key">The key.</param>
    /// <param name="k">The list's length (1 to the server's MaxTopK).</param>
    /// <param name="order">The order.</param>
    /// <param name="value">The payload.</param>
    /// <returns>The operation.</returns>
    public static HyderOperation TopKInsert(byte[] key, int k, long order, byte[] value) => new(HyderOperationKind.TopKInsert, key, value, Order: order, K: k);
}

/// <summary>What one operation returned.</summary>
/// <param name="Found">A get found its key; a delete's key existed; true for a put.</param>
/// <param name="Value">A get's payload (null when not found).</param>
/// <param name="Rows">A scan's rows (empty for other operations).</param>
public sealed record HyderOperationResult(bool Found, byte[]? Value, IReadOnlyList<KeyValuePair<byte[], byte[]>> Rows);

/// <summary>A committed transaction.</summary>
/// <param name="Ordinal">Its intention's ordinal in the log (0 for a read-only transaction).</param>
/// <param name="SnapshotSequence">The committed state it read.</param>
/// <param name="Results">One result per operation (one-shot transactions; empty for interactive ones).</param>
public sealed record CommitResult(long Ordinal, long SnapshotSequence, IReadOnlyList<HyderOperationResult> Results);

/// <summary>A server's view of the cluster.</summary>
/// <param name="ServerId">The server's name.</param>
/// <param name="LastMelded">The last ordinal final meld finished.</param>
/// <param name="CommittedSequence">The sequence of the last committed state.</param>
/// <param name="InFlight">Transactions awaiting their outcome.</param>
/// <param name="Committed">Transactions the server committed.</param>
/// <param name="Aborted">Transactions the server saw aborted.</param>
/// <param name="Pipeline">The cluster's pipeline settings.</param>
/// <param name="Peers">The peers the server broadcasts to.</param>
public sealed record HyderClusterStatus(string ServerId, long LastMelded, long CommittedSequence, int InFlight, long Committed, long Aborted, string Pipeline, IReadOnlyList<string> Peers)
{
    /// <summary>Gen-2 garbage collections in the server process since it started.</summary>
    public long Gen2Collections { get; init; }

    /// <summary>The server process's managed heap, in bytes (without forcing a collection).</summary>
    public long ManagedHeapBytes { get; init; }

    /// <summary>The server process's resident set, in bytes.</summary>
    public long WorkingSetBytes { get; init; }
}

/// <summary>A hash of a committed state; servers that melded the same log agree on it.</summary>
/// <param name="Ordinal">The last ordinal melded into the state.</param>
/// <param name="Sequence">The state's sequence.</param>
/// <param name="Hash">The hash.</param>
public readonly record struct HyderStateHash(long Ordinal, long Sequence, ulong Hash);
