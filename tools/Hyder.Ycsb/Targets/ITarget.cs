using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Targets;

/// <summary>
/// A system the load generator drives: the Hyder transaction server (an embedded cluster, or a
/// running one through the client), PostgreSQL, and the in-memory reference target for tests. Thread-safe; each worker slot opens its
/// own session.
/// </summary>
internal interface ITarget : IAsyncDisposable
{
    /// <summary>One line for the report's header.</summary>
    string Description { get; }

    /// <summary>Makes sure every key space has a table; empties them when <paramref name="reset"/> (the load phase).</summary>
    Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken);

    Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken);

    /// <summary>
    /// The target's own counters at the start of a measured window, handed back to
    /// <see cref="SummarizeAsync"/> at its end; null for a target that keeps none.
    /// </summary>
    ValueTask<object?> SampleAsync(CancellationToken cancellationToken) => ValueTask.FromResult<object?>(null);

    /// <summary>
    /// The target's figures over the measured window that began with <paramref name="start"/>: the
    /// rows of the report's <c>[HYDER]</c> section and the JSON's <c>target</c> object. Empty for a
    /// target that keeps none.
    /// </summary>
    ValueTask<IReadOnlyList<(string Metric, double Value)>> SummarizeAsync(object? start, long committedTransactions, CancellationToken cancellationToken) =>
        ValueTask.FromResult<IReadOnlyList<(string Metric, double Value)>>([]);
}

/// <summary>
/// One client's connection: one transaction at a time, begun, operated on, then committed or
/// rolled back. Any operation may throw <see cref="TransactionAbortedException"/> (PostgreSQL
/// reports serialization failures and deadlocks at the statement); the caller then rolls back.
/// Key and value buffers are only valid until the returned task completes: a target that keeps
/// them copies them.
/// </summary>
internal interface ITargetSession : IAsyncDisposable
{
    ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken);

    /// <summary>Reads a record; false when there is none.</summary>
    ValueTask<bool> GetAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken);

    /// <summary>Reads a counter of a <see cref="ValueKind.Counter"/> key space; null when there is none.</summary>
    ValueTask<long?> ReadCounterAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken);

    /// <summary>Writes a record, inserting or replacing it (for counters, the value is 8 bytes little-endian).</summary>
    ValueTask PutAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken);

    /// <summary>Inserts a record; false (and nothing written) when the key exists.</summary>
    ValueTask<bool> InsertAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken);

    /// <summary>Deletes a record; false when there was none.</summary>
    ValueTask<bool> DeleteAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken);

    /// <summary>Reads up to <paramref name="limit"/> records from <paramref name="startKey"/> upwards in key order; returns how many.</summary>
    ValueTask<int> ScanAsync(KeySpace space, ReadOnlyMemory<byte> startKey, int limit, CancellationToken cancellationToken);

    /// <summary>Adds <paramref name="delta"/> to a counter (a missing counter counts as 0).</summary>
    ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, CancellationToken cancellationToken);

    /// <summary>
    /// Adds <paramref name="delta"/> to a counter whose result must lie in [<paramref name="min"/>,
    /// <paramref name="max"/>] (each optional); when it would not, the transaction aborts with
    /// <see cref="Metrics.AbortCause.BoundViolated"/> (thrown here or reported at commit). Targets
    /// without bounded adds throw <see cref="NotSupportedException"/> for bounds.
    /// </summary>
    ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, long? min, long? max, CancellationToken cancellationToken) =>
        min is null && max is null
            ? AddAsync(space, key, delta, cancellationToken)
            : throw new NotSupportedException("this target has no bounded Add");

    ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken);

    /// <summary>Whether <see cref="RunOneShotAsync"/> runs a transaction in one request (<c>--one-shot</c>).</summary>
    bool CanRunOneShot => false;

    /// <summary>
    /// Runs a whole transaction of reads and writes that do not depend on one another's results as
    /// one request: begin, the operations in order and commit together (Hyder's one-shot
    /// <c>Execute</c>, one round trip over gRPC), instead of begin, one call per operation and commit.
    /// </summary>
    ValueTask<OneShotOutcome> RunOneShotAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken) =>
        throw new NotSupportedException("this target runs interactive transactions only");

    /// <summary>Whether <see cref="RunPipelinedAsync"/> pipelines an interactive transaction (<c>--connect</c>).</summary>
    bool CanPipeline => false;

    /// <summary>
    /// Runs a whole interactive transaction of reads and writes that do not depend on one another's
    /// results with its operations pipelined: begin, the reads sent without waiting for each
    /// answer and then awaited, then the writes and the commit sent together. The operations reach
    /// the server in plan order, so a read behind a write of the same key still sees it.
    /// </summary>
    ValueTask<OneShotOutcome> RunPipelinedAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken) =>
        throw new NotSupportedException("this target does not pipeline interactive transactions");

    /// <summary>Ends the transaction without committing; safe after an abort or when none is open.</summary>
    ValueTask RollbackAsync(CancellationToken cancellationToken);
}

/// <summary>One operation of a one-shot transaction: a read of <paramref name="Key"/>, or a write of <paramref name="Value"/> to it.</summary>
/// <param name="Space">The key space.</param>
/// <param name="Key">The key (valid until the call's task completes).</param>
/// <param name="Value">The value to write; null for a read.</param>
internal readonly record struct OneShotOperation(KeySpace Space, ReadOnlyMemory<byte> Key, ReadOnlyMemory<byte>? Value);

/// <summary>How a one-shot transaction ended, and how many of its reads found no record (0 unless it committed).</summary>
internal readonly record struct OneShotOutcome(CommitOutcome Outcome, int NotFound);

/// <summary>How a commit ended.</summary>
internal readonly record struct CommitOutcome(bool Committed, AbortCause Cause)
{
    public static CommitOutcome Success => new(true, default);

    public static CommitOutcome Aborted(AbortCause cause) => new(false, cause);

    public override string ToString() => Committed ? "committed" : $"aborted ({AbortCauses.Name(Cause)})";
}

/// <summary>The target aborted the transaction during an operation; retrying it may succeed.</summary>
internal sealed class TransactionAbortedException : Exception
{
    public TransactionAbortedException()
        : this(AbortCause.Other, "The transaction was aborted.", null)
    {
    }

    public TransactionAbortedException(string message)
        : this(AbortCause.Other, message, null)
    {
    }

    public TransactionAbortedException(string message, Exception innerException)
        : this(AbortCause.Other, message, innerException)
    {
    }

    public TransactionAbortedException(AbortCause cause, string message, Exception? innerException)
        : base(message, innerException)
    {
        Cause = cause;
    }

    public AbortCause Cause { get; }
}

/// <summary>The target cannot be used (not reachable, not available yet); ends the run with a clear message.</summary>
internal sealed class TargetUnavailableException : Exception
{
    public TargetUnavailableException()
    {
    }

    public TargetUnavailableException(string message)
        : base(message)
    {
    }

    public TargetUnavailableException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
