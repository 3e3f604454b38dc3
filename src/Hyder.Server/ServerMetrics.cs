using System.Diagnostics.Metrics;
using Hyder.Tree.Meld;

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

    internal ServerMetrics(TransactionServer server)
    {
        _meter = new Meter(MeterName);
        var tags = new KeyValuePair<string, object?>("server", server.Options.ServerId);
        _meter.CreateObservableCounter("hyder.commits", () => new Measurement<long>(Commits, tags), description: "intentions committed by final meld (every server's)");
        _meter.CreateObservableCounter("hyder.aborts", ObserveAborts, description: "intentions aborted, by cause");
        _meter.CreateObservableGauge("hyder.in_flight", () => new Measurement<int>(server.InFlight, tags), description: "this server's transactions awaiting an outcome");
        _meter.CreateObservableCounter("hyder.conflict_zone", () => new Measurement<long>(Volatile.Read(ref _conflictZone), tags), description: "sum of conflict-zone lengths of melded intentions");
        _meter.CreateObservableCounter("hyder.nodes_visited", () => ObserveNodes(server), description: "nodes visited, by pipeline stage");
        _meter.CreateObservableGauge("hyder.queue_depth", () => ObserveQueues(server), description: "ordinals waiting between stages");
        _meter.CreateObservableCounter("hyder.appended", () => new Measurement<long>(Appended, tags), description: "intentions this server appended");
        _meter.CreateObservableCounter("hyder.read_only_commits", () => new Measurement<long>(ReadOnlyCommits, tags), description: "read-only transactions committed locally");
        _meter.CreateObservableCounter("hyder.broadcast_hits", () => new Measurement<long>(BroadcastHits, tags), description: "blocks taken from peers' broadcasts instead of the log");
        _meter.CreateObservableCounter("hyder.log_reads", () => new Measurement<long>(LogReads, tags), description: "blocks read from the log");
        Tag = tags;
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
    public long Appended { get; internal set; }

    /// <summary>Read-only transactions committed locally.</summary>
    public long ReadOnlyCommits { get; internal set; }

    /// <summary>Transactions refused by admission control.</summary>
    public long Refused { get; internal set; }

    /// <summary>Transactions whose outcome could not be learnt.</summary>
    public long Unknown { get; internal set; }

    /// <summary>Blocks taken from broadcasts.</summary>
    public long BroadcastHits { get; internal set; }

    /// <summary>Blocks read from the log.</summary>
    public long LogReads { get; internal set; }

    /// <summary>Blocks skipped as not Hyder's (no ordinal).</summary>
    public long SkippedBlocks { get; internal set; }

    /// <summary>Intentions the decoder rejected.</summary>
    public long RejectedBlocks { get; internal set; }

    /// <summary>Fillers this server appended.</summary>
    public long Fillers { get; internal set; }

    /// <summary>Flush intentions this server committed.</summary>
    public long Flushes { get; internal set; }

    /// <summary>Ephemeral nodes its flushes copied.</summary>
    public long FlushedNodes { get; internal set; }

    /// <summary>Checkpoints this server wrote.</summary>
    public long Checkpoints { get; internal set; }

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
