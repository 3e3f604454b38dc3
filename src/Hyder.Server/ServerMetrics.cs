using System.Diagnostics.Metrics;
using Hyder.Tree.Meld;
using Hyder.Tree.Pipeline;

namespace Hyder.Server;

/// <summary>
/// The server's figures, plain counters for tests and reports, and instruments of the
/// <c>Hyder.Server</c> meter (System.Diagnostics.Metrics) for dotnet-counters and exporters.
/// </summary>
public sealed class ServerMetrics : IDisposable
{
    /// <summary>The meter's name.</summary>
    public const string MeterName = "Hyder.Server";

    private readonly Meter _meter;
    private readonly long[] _aborts = new long[16];
    private long _commits;
    private long _conflictZone;
    private readonly long[] _counts = new long[(int)Counter.Count];
    private readonly long[] _cpu = new long[(int)ExecutorStage.Count];

    /// <summary>One stretch in this many per stage and thread is timed (<see cref="StartCpu"/>); a power of two.</summary>
    internal const int CpuSampleEvery = 8;

    /// <summary>
    /// One operation of an interactive transaction in this many per thread is timed
    /// (<see cref="StartOperationCpu"/>); a power of two. An 8R2W transaction has ten such
    /// stretches of 1-4 µs, so one in 8 cost it two clock reads (about 1.5 µs on the project's VM).
    /// </summary>
    internal const int OperationCpuSampleEvery = 64;

    [ThreadStatic]
    private static int[]? t_cpuTicks;

    internal ServerMetrics(TransactionServer server)
        : this(server.Options.ServerId)
    {
        _meter.CreateObservableGauge("hyder.in_flight", () => new Measurement<int>(server.InFlight, Tag), description: "this server's transactions awaiting an outcome");
        _meter.CreateObservableCounter("hyder.nodes_visited", () => ObserveNodes(server), description: "nodes visited, by pipeline stage");
        _meter.CreateObservableGauge("hyder.queue_depth", () => ObserveQueues(server), description: "ordinals waiting between stages");
        _meter.CreateObservableGauge("hyder.outcome_leases_open", () => new Measurement<long>(server.Leases.Open, Tag), description: "one-shot outcomes whose lent values are not yet released (docs/value-storage.md)");
    }

    /// <summary>The counters of server <paramref name="serverId"/> without the gauges that observe a whole server (a log follower on its own, in tests).</summary>
    internal ServerMetrics(string serverId)
    {
        _meter = new Meter(MeterName);
        var tags = new KeyValuePair<string, object?>("server", serverId);
        Tag = tags;
        _meter.CreateObservableCounter("hyder.commits", () => new Measurement<long>(Commits, tags), description: "intentions committed by final meld (every server's)");
        _meter.CreateObservableCounter("hyder.aborts", ObserveAborts, description: "intentions aborted, by cause");
        _meter.CreateObservableCounter("hyder.conflict_zone", () => new Measurement<long>(Volatile.Read(ref _conflictZone), tags), description: "sum of conflict-zone lengths of melded intentions");
        _meter.CreateObservableCounter("hyder.appended", () => new Measurement<long>(Appended, tags), description: "intentions this server appended");
        _meter.CreateObservableCounter("hyder.read_only_commits", () => new Measurement<long>(ReadOnlyCommits, tags), description: "read-only transactions committed locally");
        _meter.CreateObservableCounter("hyder.broadcast_hits", () => new Measurement<long>(BroadcastHits, tags), description: "blocks taken from peers' broadcasts (verified against the log unless the server trusts broadcast)");
        _meter.CreateObservableCounter("hyder.broadcast_mismatches", () => new Measurement<long>(BroadcastMismatches, tags), description: "peers' broadcast blocks that differed from the log's; the log's was used");
        _meter.CreateObservableCounter("hyder.log_reads", () => new Measurement<long>(LogReads, tags), description: "blocks read from the log");
    }

    private KeyValuePair<string, object?> Tag { get; }

    /// <summary>Intentions committed (all servers').</summary>
    public long Commits => Volatile.Read(ref _commits);

    /// <summary>Intentions aborted (all servers').</summary>
    public long Aborts
    {
        get
        {
            long n = 0;
            for (var i = 0; i < _aborts.Length; i++)
            {
                n += Volatile.Read(ref _aborts[i]);
            }

            return n;
        }
    }

    /// <summary>Aborts of one cause.</summary>
    public long AbortsOf(AbortCause cause) => Volatile.Read(ref _aborts[(int)cause]);

    /// <summary>Sum of conflict-zone lengths.</summary>
    public long ConflictZoneTotal => Volatile.Read(ref _conflictZone);

    /// <summary>Intentions this server appended.</summary>
    public long Appended => Volatile.Read(ref _counts[(int)Counter.Appended]);

    /// <summary>Read-only transactions committed locally.</summary>
    public long ReadOnlyCommits => Volatile.Read(ref _counts[(int)Counter.ReadOnlyCommits]);

    /// <summary>Transactions refused by admission control.</summary>
    public long Refused => Volatile.Read(ref _counts[(int)Counter.Refused]);

    /// <summary>Transactions whose outcome could not be learnt.</summary>
    public long Unknown => Volatile.Read(ref _counts[(int)Counter.Unknown]);

    /// <summary>Blocks taken from broadcasts (unless the server trusts broadcast, only those byte-identical to the log's).</summary>
    public long BroadcastHits => Volatile.Read(ref _counts[(int)Counter.BroadcastHits]);

    /// <summary>Peers' broadcast blocks that differed from the log's block at their position (or the position held no data); the log's was used.</summary>
    public long BroadcastMismatches => Volatile.Read(ref _counts[(int)Counter.BroadcastMismatches]);

    /// <summary>Blocks read from the log.</summary>
    public long LogReads => Volatile.Read(ref _counts[(int)Counter.LogReads]);

    /// <summary>Blocks skipped as not Hyder's (no ordinal).</summary>
    public long SkippedBlocks => Volatile.Read(ref _counts[(int)Counter.SkippedBlocks]);

    /// <summary>Intentions read from the log that the decoder or the validator rejected (on a deserializer thread).</summary>
    public long RejectedBlocks => Volatile.Read(ref _counts[(int)Counter.RejectedBlocks]);

    /// <summary>This server's own intentions the validator refused before they were appended.</summary>
    public long RefusedIntentions => Volatile.Read(ref _counts[(int)Counter.RefusedIntentions]);

    /// <summary>Fillers this server appended.</summary>
    public long Fillers => Volatile.Read(ref _counts[(int)Counter.Fillers]);

    /// <summary>Flush intentions this server committed.</summary>
    public long Flushes => Volatile.Read(ref _counts[(int)Counter.Flushes]);

    /// <summary>Ephemeral nodes its flushes copied.</summary>
    public long FlushedNodes => Volatile.Read(ref _counts[(int)Counter.FlushedNodes]);

    /// <summary>Checkpoints this server wrote.</summary>
    public long Checkpoints => Volatile.Read(ref _counts[(int)Counter.Checkpoints]);

    /// <summary>Transactions (or interactive operations) that met a split key inside a phase and waited for the reconciled state (Doppel's stash).</summary>
    public long Stashed => Volatile.Read(ref _counts[(int)Counter.Stashed]);

    /// <summary>
    /// CPU nanoseconds executors spent in one stage, over all transactions (<see cref="ThreadCpu"/>, sampled: <see cref="StartCpu"/>):
    /// the synchronous stretches on the executor's thread that the stage threads' own CPU does not cover.
    /// </summary>
    public long CpuNanoseconds(ExecutorStage stage) => Volatile.Read(ref _cpu[(int)stage]);

    internal void AddCpu(ExecutorStage stage, long nanoseconds) => Interlocked.Add(ref _cpu[(int)stage], nanoseconds);

    /// <summary>
    /// Starts timing one stretch of <paramref name="stage"/> on this thread, or not: reading a
    /// thread's CPU clock is a system call (about 0.4-0.7 µs here, against 1-4 µs for an operation),
    /// so one stretch in <see cref="CpuSampleEvery"/> per stage and thread is timed and counted
    /// that many times over (<see cref="EndCpu"/>).
    /// </summary>
    /// <returns>The thread's CPU clock, or -1 when this stretch is not timed.</returns>
    internal static long StartCpu(ExecutorStage stage) => Sample((int)stage, CpuSampleEvery);

    /// <summary>Ends a stretch <see cref="StartCpu"/> began: a timed one adds <see cref="CpuSampleEvery"/> times its CPU.</summary>
    internal void EndCpu(ExecutorStage stage, long start) => AddSampled(stage, start, CpuSampleEvery);

    /// <summary>
    /// Starts timing one operation of an interactive transaction, an execute stretch counted apart
    /// from <see cref="StartCpu"/>'s: one in <see cref="OperationCpuSampleEvery"/> per thread is timed.
    /// </summary>
    /// <returns>The thread's CPU clock, or -1 when this operation is not timed.</returns>
    internal static long StartOperationCpu() => Sample((int)ExecutorStage.Count, OperationCpuSampleEvery);

    /// <summary>Ends what <see cref="StartOperationCpu"/> began: a timed operation adds <see cref="OperationCpuSampleEvery"/> times its CPU to execute.</summary>
    internal void EndOperationCpu(long start) => AddSampled(ExecutorStage.Execute, start, OperationCpuSampleEvery);

    /// <summary>Adds a timed stretch's CPU <paramref name="every"/> times over; an untimed one (-1) adds nothing.</summary>
    private void AddSampled(ExecutorStage stage, long start, int every)
    {
        if (start >= 0)
        {
            AddCpu(stage, (ThreadCpu.NowNs() - start) * every);
        }
    }

    /// <summary>Counts a stretch of one kind on this thread; the thread's CPU clock when it is the one in <paramref name="every"/> to time, else -1.</summary>
    private static long Sample(int kind, int every)
    {
        // One counter per stage, and one for interactive operations.
        var ticks = t_cpuTicks ??= new int[(int)ExecutorStage.Count + 1];
        return (++ticks[kind] & (every - 1)) == 0 ? ThreadCpu.NowNs() : -1;
    }

    /// <summary>Counts <paramref name="n"/> events; any thread (executors, reader, deserializers and background work all count).</summary>
    internal void Add(Counter counter, long n = 1) => Interlocked.Add(ref _counts[(int)counter], n);

    internal void OnMelded(in MeldOutcome outcome)
    {
        if (outcome.Committed)
        {
            Interlocked.Increment(ref _commits);
        }
        else
        {
            Interlocked.Increment(ref _aborts[(int)outcome.Cause]);
        }

        Interlocked.Add(ref _conflictZone, outcome.ConflictZoneLength);
        if (outcome.Cause == AbortCause.Rejected)
        {
            LastRejection = outcome.RejectReason;
        }
    }

    /// <summary>Why the last rejected intention was rejected.</summary>
    public string? LastRejection { get; private set; }

    private IEnumerable<Measurement<long>> ObserveAborts()
    {
        for (var i = 1; i < _aborts.Length; i++)
        {
            var n = Volatile.Read(ref _aborts[i]);
            if (n > 0)
            {
                yield return new Measurement<long>(n, Tag, new KeyValuePair<string, object?>("cause", ((AbortCause)i).ToString()));
            }
        }
    }

    private IEnumerable<Measurement<long>> ObserveNodes(TransactionServer server)
    {
        yield return new Measurement<long>(server.Database.FinalMeld.Counters.IntentionNodesVisited + server.Database.FinalMeld.Counters.StateNodesVisited, Tag, new("stage", "final"));
        var premeld = server.Pipeline.PremeldOperators.Sum(p => p.Counters.IntentionNodesVisited + p.Counters.StateNodesVisited);
        yield return new Measurement<long>(premeld, Tag, new("stage", "premeld"));
        if (server.Pipeline.GroupOperator is { } g)
        {
            yield return new Measurement<long>(g.Counters.IntentionNodesVisited + g.Counters.StateNodesVisited, Tag, new("stage", "group"));
        }
    }

    private IEnumerable<Measurement<long>> ObserveQueues(TransactionServer server)
    {
        yield return new Measurement<long>(server.LastRead - server.LastMelded, Tag, new("between", "read-melded"));
    }

    /// <inheritdoc/>
    public void Dispose() => _meter.Dispose();
}

/// <summary>The executor's stages whose CPU <see cref="ServerMetrics.CpuNanoseconds"/> counts.</summary>
public enum ExecutorStage
{
    /// <summary>Running the transaction's operations on its snapshot, to its intention.</summary>
    Execute,

    /// <summary>Validating the intention the transaction built, before it is encoded (the checks every server makes of a block it reads).</summary>
    Validate,

    /// <summary>Encoding the intention into blocks.</summary>
    Encode,

    /// <summary>The executor's side of the outcome: from its wake-up to the transaction's answer.</summary>
    Outcome,

    /// <summary>The number of stages.</summary>
    Count,
}

/// <summary>The server's event counters (indices into <see cref="ServerMetrics"/>' table).</summary>
internal enum Counter
{
    Appended,
    ReadOnlyCommits,
    Refused,
    Unknown,
    BroadcastHits,
    LogReads,
    SkippedBlocks,
    RejectedBlocks,
    Fillers,
    Flushes,
    FlushedNodes,
    Checkpoints,
    Stashed,
    RefusedIntentions,
    BroadcastMismatches,
    Count,
}
