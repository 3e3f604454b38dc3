using System.Diagnostics;
using Hyder.Server;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Server;

/// <summary>What one configuration's measured window saw, per transaction where it makes sense.</summary>
internal sealed record ServerResult
{
    public required ServerConfig Config { get; init; }

    public required string Threading { get; init; }

    public double Seconds { get; init; }

    public double LoadSeconds { get; init; }

    /// <summary>Committed transactions per second, as the clients saw them.</summary>
    public double CommittedPerSecond { get; init; }

    /// <summary>Transactions the clients saw finish (committed, aborted, unknown).</summary>
    public long Transactions { get; init; }

    public long Committed { get; init; }

    /// <summary>Final meld's aborts in the window, by cause.</summary>
    public Dictionary<AbortCause, long> Aborts { get; init; } = [];

    public long Unknown { get; init; }

    public long Refused { get; init; }

    public double AbortRate { get; init; }

    public double MeanLatencyMs { get; init; }

    /// <summary>The zone the transaction was born with: ordinal − 1 − snapshot.</summary>
    public double TransactionZone { get; init; }

    /// <summary>The zone final meld saw (after premeld: from the premeld's input state).</summary>
    public double FinalZone { get; init; }

    public double FinalNodesPerCommit { get; init; }

    public double FinalNodesPerTxn { get; init; }

    public double PremeldNodesPerTxn { get; init; }

    public double GroupNodesPerTxn { get; init; }

    public double EphemeralPerTxn { get; init; }

    public double BytesPerTxn { get; init; }

    public int[] Collections { get; init; } = [];

    /// <summary>Process CPU seconds per wall second (2.0 = both cores of this machine).</summary>
    public double CpuPerWall { get; init; }

    /// <summary>CPU seconds per wall second, by thread group.</summary>
    public Dictionary<string, double> ThreadCpu { get; init; } = [];

    /// <summary>CPU microseconds per committed transaction by stage, and final meld's utilisation (docs/server.md, "CPU budget").</summary>
    public IReadOnlyList<(string Metric, double Value)> Budget { get; init; } = [];

    /// <summary>Share of 1 ms samples in which ordinals were read but not yet melded.</summary>
    public double BacklogBusy { get; init; }

    public double BacklogMean { get; init; }

    public static ServerResult From(ServerConfig config, TransactionServer server, ServerRun.Snapshot a, ServerRun.Snapshot b, ServerRun.Client[] clients, (double Busy, double Mean) backlog, double loadSeconds)
    {
        var seconds = (b.Timestamp - a.Timestamp) / (double)Stopwatch.Frequency;
        var committed = clients.Sum(c => c.Committed);
        var aborted = clients.Sum(c => c.Aborted);
        var unknown = clients.Sum(c => c.Unknown);
        var txns = committed + aborted + unknown;
        var melded = (b.Commits - a.Commits) + b.AbortsByCause.Zip(a.AbortsByCause, (x, y) => x - y).Sum();
        var final = b.Final - a.Final;
        var premeld = b.Premeld - a.Premeld;
        var group = b.Group - a.Group;
        var aborts = new Dictionary<AbortCause, long>();
        for (var i = 0; i < b.AbortsByCause.Length; i++)
        {
            if (b.AbortsByCause[i] - a.AbortsByCause[i] is > 0 and var n)
            {
                aborts[(AbortCause)i] = n;
            }
        }

        var finalCommits = Math.Max(1, b.Commits - a.Commits);
        var perTxn = Math.Max(1, melded);
        return new ServerResult
        {
            Config = config,
            Threading = server.Pipeline.Threading.ToString(),
            Seconds = seconds,
            LoadSeconds = loadSeconds,
            CommittedPerSecond = committed / seconds,
            Transactions = txns,
            Committed = committed,
            Aborts = aborts,
            Unknown = unknown,
            Refused = clients.Sum(c => c.Refused),
            AbortRate = aborted / (double)Math.Max(1, txns),
            MeanLatencyMs = clients.Sum(c => c.LatencyTicks) * 1000.0 / Stopwatch.Frequency / Math.Max(1, txns),
            TransactionZone = clients.Sum(c => c.ZoneTotal) / (double)Math.Max(1, committed + aborted),
            FinalZone = final.Zone / (double)Math.Max(1, final.Melds),

            // Per transaction as Hyder II Fig. 11 counts: a group intention's work is two transactions'.
            FinalNodesPerCommit = final.Nodes / (double)finalCommits,
            FinalNodesPerTxn = final.Nodes / (double)perTxn,
            PremeldNodesPerTxn = premeld.Nodes / (double)perTxn,
            GroupNodesPerTxn = group.Nodes / (double)perTxn,
            EphemeralPerTxn = final.Ephemeral / (double)perTxn,
            BytesPerTxn = (b.Allocated - a.Allocated) / (double)Math.Max(1, txns),
            Collections = [.. b.Collections.Zip(a.Collections, (x, y) => x - y)],
            CpuPerWall = (b.ProcessCpu - a.ProcessCpu).TotalSeconds / seconds,
            ThreadCpu = Hyder.Server.Diagnostics.ThreadTimes.Delta(a.Threads, b.Threads).Where(p => p.Value > 0).ToDictionary(p => p.Key, p => p.Value / seconds),
            Budget = Hyder.Server.Diagnostics.StageBudget.Rows(a.Budget, b.Budget, committed),
            BacklogBusy = backlog.Busy,
            BacklogMean = backlog.Mean,
        };
    }
}
