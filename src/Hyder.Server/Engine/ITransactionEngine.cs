using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Server.Engine;

/// <summary>
/// What a transaction server offers its clients, independent of any wire protocol: the gRPC
/// service (Hyder.Server.Grpc) maps its messages onto this, and tests can drive it directly.
/// </summary>
/// <remarks>
/// Every method is safe to call from many threads. Bad input throws <see cref="EngineException"/>
/// with <see cref="EngineErrorCode.InvalidArgument"/> before anything is applied; a full server
/// throws <see cref="EngineErrorCode.ResourceExhausted"/>.
/// </remarks>
public interface ITransactionEngine
{
    /// <summary>The limits requests are checked against.</summary>
    EngineLimits Limits { get; }

    /// <summary>
    /// Runs a one-shot transaction: the operations in order on the current committed state, then
    /// (when it wrote) its intention through the log and meld. Read-only batches commit locally on
    /// their snapshot and never reach the log.
    /// </summary>
    ValueTask<TransactionOutcome> ExecuteAsync(IsolationLevel isolation, IReadOnlyList<Operation> operations, CancellationToken cancellationToken = default);

    /// <summary>Starts an interactive transaction on the current committed state.</summary>
    IInteractiveTransaction Begin(IsolationLevel isolation);

    /// <summary>
    /// A read-only range scan on one snapshot: keys in [<paramref name="low"/>, <paramref name="high"/>)
    /// in ascending order (null bounds are open), at most <paramref name="limit"/> rows (0: no limit).
    /// </summary>
    IAsyncEnumerable<KeyValuePair<byte[], byte[]>> ScanAsync(byte[]? low, byte[]? high, int limit, CancellationToken cancellationToken = default);

    /// <summary>The server's view of the cluster.</summary>
    ValueTask<ClusterStatus> GetStatusAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// A hash of the last committed state's physical form (ephemeral ids included); waits, up to
    /// the token, until the server has melded at least <paramref name="atLeastOrdinal"/>.
    /// </summary>
    ValueTask<StateHash> GetStateHashAsync(long atLeastOrdinal = 0, CancellationToken cancellationToken = default);

    /// <summary>
    /// Completes once this engine has melded at least <paramref name="ordinal"/>, so that every
    /// snapshot taken afterwards includes it (a client's "at least ordinal N" token, docs/api.md
    /// "Read your writes"). Completes at once when it is melded already. Fails with
    /// <see cref="EngineErrorCode.Unavailable"/> when the engine's own wait limit passes first or
    /// it stops; cancelled by the token (the call's deadline).
    /// </summary>
    ValueTask WaitForMeldedAsync(long ordinal, CancellationToken cancellationToken = default);

    /// <summary>Writes a checkpoint (admin); returns the ordinal it restarts after.</summary>
    ValueTask<long> CheckpointAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Trims the shared log now by the trim rule, keeping the latest
    /// <paramref name="keepCheckpoints"/> self-contained checkpoints (admin; docs/server.md,
    /// "Trimming the log"); returns the position the log is trimmed below.
    /// <see cref="EngineErrorCode.InvalidArgument"/> for a count outside 1..<see cref="MaxTrimKeepCheckpoints"/>,
    /// <see cref="EngineErrorCode.FailedPrecondition"/> while the server knows fewer checkpoints
    /// (and for an engine without a shared log).
    /// </summary>
    ValueTask<long> TrimLogAsync(int keepCheckpoints, CancellationToken cancellationToken = default) =>
        throw new EngineException(EngineErrorCode.FailedPrecondition, "this engine has no shared log to trim");

    /// <summary>The most checkpoints a trim may be asked to keep.</summary>
    const int MaxTrimKeepCheckpoints = 1 << 20;
}

/// <summary>An interactive transaction: operations on one snapshot, then commit or abort.</summary>
public interface IInteractiveTransaction : IAsyncDisposable
{
    /// <summary>The sequence of the committed state the transaction reads.</summary>
    long SnapshotSequence { get; }

    /// <summary>The isolation level.</summary>
    IsolationLevel Isolation { get; }

    /// <summary>Runs one operation on the snapshot (and the transaction's own writes).</summary>
    /// <remarks>May block while the transaction waits for a split phase to end (docs/doppel.md); prefer <see cref="ExecuteAsync"/>.</remarks>
    OperationResult Execute(Operation operation);

    /// <summary>
    /// Runs one operation; when it meets a key split in the snapshot's phase, it waits for the
    /// reconciled state without blocking a thread (docs/doppel.md, "Split phases").
    /// </summary>
    ValueTask<OperationResult> ExecuteAsync(Operation operation, CancellationToken cancellationToken = default) => ValueTask.FromResult(Execute(operation));

    /// <summary>Commits: appends the intention (if any) and waits for the local final meld's decision.</summary>
    ValueTask<TransactionOutcome> CommitAsync(CancellationToken cancellationToken = default);

    /// <summary>Throws the transaction's work away.</summary>
    void Abort();
}

/// <summary>What an operation does.</summary>
public enum OperationKind : byte
{
    /// <summary>Read one key.</summary>
    Get = 0,

    /// <summary>Insert or update one key.</summary>
    Put = 1,

    /// <summary>Delete one key (absent keys are not an error).</summary>
    Delete = 2,

    /// <summary>Read keys in [Key, End) ascending, at most Limit rows (0: the server's maximum).</summary>
    Scan = 3,

    /// <summary>
    /// Add Delta to the 8-byte little-endian counter at Key (absent counts as 0), as a commutative
    /// operation: two Adds of one key never conflict; meld applies them in log order (docs/doppel.md).
    /// With Min and/or Max the result must lie in [Min, Max] where the transaction lands in the log
    /// (escrow), else it aborts with BoundViolated. Returns nothing.
    /// </summary>
    Add = 4,

    /// <summary>Keeps the larger of the counter at Key and Delta (absent: Delta). Commutative; returns nothing.</summary>
    Max = 5,

    /// <summary>Keeps the smaller of the counter at Key and Delta (absent: Delta). Commutative; returns nothing.</summary>
    Min = 6,

    /// <summary>Ordered put: Key keeps (Order, Value) when Order is the highest it has seen (ties: the larger Value). Commutative; returns nothing.</summary>
    OPut = 7,

    /// <summary>Inserts (Order, Value) into the top-K list at Key (the K highest orders). Commutative; returns nothing.</summary>
    TopKInsert = 8,
}

/// <summary>One operation of a transaction.</summary>
/// <param name="Kind">What it does.</param>
/// <param name="Key">The key (the scan's inclusive low bound; empty for unbounded).</param>
/// <param name="Value">The payload of a put, an OPut or a TopKInsert.</param>
/// <param name="End">A scan's exclusive high bound, or null for unbounded.</param>
/// <param name="Limit">A scan's row limit (0: the server's maximum).</param>
/// <param name="Delta">An Add's amount; a Max's or Min's operand.</param>
/// <param name="Min">An Add's lower bound (null: none).</param>
/// <param name="Max">An Add's upper bound (null: none).</param>
/// <param name="Order">An OPut's or TopKInsert's order.</param>
/// <param name="K">A TopKInsert's list length, 1 to <see cref="EngineLimits.MaxTopK"/>.</param>
public readonly record struct Operation(
    OperationKind Kind,
    byte[] Key,
    byte[]? Value = null,
    byte[]? End = null,
    int Limit = 0,
    long Delta = 0,
    long? Min = null,
    long? Max = null,
    long Order = 0,
    int K = 0)
{
    /// <summary>A get.</summary>
    public static Operation Get(byte[] key) => new(OperationKind.Get, key);

    /// <summary>A put.</summary>
    public static Operation Put(byte[] key, byte[] value) => new(OperationKind.Put, key, value);

    /// <summary>A delete.</summary>
    public static Operation Delete(byte[] key) => new(OperationKind.Delete, key);

    /// <summary>A scan of [low, high).</summary>
    public static Operation Scan(byte[] low, byte[]? high, int limit) => new(OperationKind.Scan, low, End: high, Limit: limit);

    /// <summary>A commutative add to a counter, optionally bounded to [min, max].</summary>
    public static Operation Add(byte[] key, long delta, long? min = null, long? max = null) => new(OperationKind.Add, key, Delta: delta, Min: min, Max: max);

    /// <summary>Keeps the larger of the counter and <paramref name="value"/>.</summary>
    public static Operation MaxOf(byte[] key, long value) => new(OperationKind.Max, key, Delta: value);

    /// <summary>Keeps the smaller of the counter and <paramref name="value"/>.</summary>
    public static Operation MinOf(byte[] key, long value) => new(OperationKind.Min, key, Delta: value);

    /// <summary>An ordered put.</summary>
    public static Operation OPut(byte[] key, long order, byte[] value) => new(OperationKind.OPut, key, value, Order: order);

    /// <summary>An insert into a top-k list.</summary>
    public static Operation TopKInsert(byte[] key, int k, long order, byte[] value) => new(OperationKind.TopKInsert, key, value, Order: order, K: k);

    /// <summary>True for the kinds that change data (put, delete and the commutative operations): the transaction writes.</summary>
    public bool IsWrite => Kind is not (OperationKind.Get or OperationKind.Scan);
}

/// <summary>What one operation returned: a value, so answering an operation allocates nothing of its own.</summary>
/// <param name="Found">A get found its key (a delete: the key existed).</param>
/// <param name="Value">A get's payload.</param>
/// <param name="Rows">A scan's rows.</param>
public readonly record struct OperationResult(bool Found, byte[]? Value = null, IReadOnlyList<KeyValuePair<byte[], byte[]>>? Rows = null)
{
    /// <summary>The result of a write.</summary>
    public static OperationResult Done => new(true);

    /// <summary>A get that found nothing.</summary>
    public static OperationResult NotFound => new(false);
}

/// <summary>How a transaction ended.</summary>
public enum TransactionStatus : byte
{
    /// <summary>Committed (durable in the log and melded).</summary>
    Committed = 0,

    /// <summary>Aborted by meld; <see cref="TransactionOutcome.Cause"/> says why. Nothing applied.</summary>
    Aborted = 1,

    /// <summary>The server could not learn the outcome (e.g. it stopped after appending).</summary>
    Unknown = 2,
}

/// <summary>The outcome of a transaction.</summary>
/// <remarks>
/// When the server recycles written values (<see cref="ServerOptions.RecycleValues"/>), the
/// results' values are lent from the transaction's snapshot and the outcome holds that snapshot
/// until <see cref="Dispose"/>: read the values (or copy them) first, then dispose the outcome.
/// An outcome never disposed keeps its snapshot and every state after it in memory. Without
/// recycling, the values are the caller's and <see cref="Dispose"/> does nothing.
/// </remarks>
/// <param name="Status">Committed, aborted or unknown.</param>
/// <param name="Cause">Why it aborted (<see cref="AbortCause.None"/> otherwise).</param>
/// <param name="Detail">A sentence for people: the conflicting key, the rejection reason.</param>
/// <param name="Ordinal">The intention's ordinal in the log (0 for a read-only transaction).</param>
/// <param name="SnapshotSequence">The committed state the transaction read.</param>
/// <param name="Results">One result per operation (one-shot transactions; empty for interactive commits).</param>
public sealed record TransactionOutcome(
    TransactionStatus Status,
    AbortCause Cause,
    string? Detail,
    long Ordinal,
    long SnapshotSequence,
    IReadOnlyList<OperationResult> Results) : IDisposable
{
    private DatabaseState? _lease;
    private OutcomeLeases? _leases;

    /// <summary>A copy (<c>with</c>) shares the values but not the lease: only the original releases it.</summary>
    private TransactionOutcome(TransactionOutcome original)
    {
        Status = original.Status;
        Cause = original.Cause;
        Detail = original.Detail;
        Ordinal = original.Ordinal;
        SnapshotSequence = original.SnapshotSequence;
        Results = original.Results;
    }

    /// <summary>Equal outcomes say the same; whether either still holds its snapshot does not count.</summary>
    public bool Equals(TransactionOutcome? other) =>
        other is not null && Status == other.Status && Cause == other.Cause && Detail == other.Detail &&
        Ordinal == other.Ordinal && SnapshotSequence == other.SnapshotSequence && Equals(Results, other.Results);

    /// <inheritdoc/>
    public override int GetHashCode() => HashCode.Combine(Status, Cause, Detail, Ordinal, SnapshotSequence, Results);

    /// <summary>True while the outcome holds its snapshot (its values are lent and not yet released).</summary>
    public bool HoldsSnapshot => Volatile.Read(ref _lease) is not null;

    /// <summary>The outcome holds <paramref name="pinned"/>, a pin the caller took for it, counted in <paramref name="leases"/>.</summary>
    internal TransactionOutcome Holding(DatabaseState pinned, OutcomeLeases leases)
    {
        _leases = leases;
        leases.Opened();
        _lease = pinned;
        return this;
    }

    /// <summary>Releases the snapshot the results' values were lent from (once; later calls do nothing).</summary>
    public void Dispose()
    {
        if (Interlocked.Exchange(ref _lease, null) is { } state)
        {
            state.Unpin();
            _leases!.Closed();
        }
    }
}

/// <summary>One server's count of outcomes that hold their snapshot (<c>hyder_outcome_leases_open</c>).</summary>
internal sealed class OutcomeLeases
{
    private long _open;

    /// <summary>Outcomes not yet disposed.</summary>
    public long Open => Interlocked.Read(ref _open);

    public void Opened() => Interlocked.Increment(ref _open);

    public void Closed() => Interlocked.Decrement(ref _open);
}

/// <summary>The size limits requests are checked against.</summary>
public sealed record EngineLimits
{
    /// <summary>Longest key, bytes.</summary>
    public int MaxKeyBytes { get; init; } = 1024;

    /// <summary>Longest payload, bytes.</summary>
    public int MaxValueBytes { get; init; } = 64 * 1024;

    /// <summary>Most operations in one transaction.</summary>
    public int MaxOperations { get; init; } = 1024;

    /// <summary>Most rows one scan returns (and the default when a scan gives no limit).</summary>
    public int MaxScanRows { get; init; } = 10_000;

    /// <summary>Largest K of a TopKInsert (at most 1024, the top-k list format's limit).</summary>
    public int MaxTopK { get; init; } = 1024;

    /// <summary>Largest request or response message, bytes.</summary>
    public int MaxMessageBytes { get; init; } = 4 * 1024 * 1024;
}

/// <summary>Why the engine refused a request.</summary>
public enum EngineErrorCode
{
    /// <summary>The request is malformed or over a limit; nothing was applied.</summary>
    InvalidArgument,

    /// <summary>Admission control: too many transactions await an outcome; retry later.</summary>
    ResourceExhausted,

    /// <summary>The server is starting or stopping.</summary>
    Unavailable,

    /// <summary>The operation does not fit the transaction's state (e.g. used after commit).</summary>
    FailedPrecondition,

    /// <summary>The interactive transaction aborted before its commit (a split key met mid-way, docs/doppel.md); retry it.</summary>
    Aborted,
}

/// <summary>A request the engine refused, with the reason.</summary>
public sealed class EngineException(EngineErrorCode code, string message) : Exception(message)
{
    /// <summary>Why.</summary>
    public EngineErrorCode Code { get; } = code;
}

/// <summary>A server's view of the cluster.</summary>
public sealed record ClusterStatus
{
    /// <summary>This server's name.</summary>
    public required string ServerId { get; init; }

    /// <summary>The last ordinal final meld finished.</summary>
    public long LastMelded { get; init; }

    /// <summary>The sequence of the last committed state.</summary>
    public long CommittedSequence { get; init; }

    /// <summary>Transactions appended and awaiting their outcome.</summary>
    public int InFlight { get; init; }

    /// <summary>Transactions this server committed.</summary>
    public long Committed { get; init; }

    /// <summary>Transactions this server saw aborted.</summary>
    public long Aborted { get; init; }

    /// <summary>The cluster's pipeline settings, as the log's first record states them.</summary>
    public required string Pipeline { get; init; }

    /// <summary>The peers this server broadcasts to.</summary>
    public IReadOnlyList<string> Peers { get; init; } = [];
}

/// <summary>A state hash and the state it is of.</summary>
/// <param name="Ordinal">The last ordinal melded into the state.</param>
/// <param name="Sequence">The state's sequence (its last committed ordinal).</param>
/// <param name="Hash">The hash (TreeInspector.StateHash).</param>
public readonly record struct StateHash(long Ordinal, long Sequence, ulong Hash);
