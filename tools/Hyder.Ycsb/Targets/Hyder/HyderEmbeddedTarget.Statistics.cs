using Hyder.Server;
using Hyder.Server.Diagnostics;
using Hyder.Tree.Meld;

namespace Hyder.Ycsb.Targets.Hyder;

internal sealed partial class HyderEmbeddedTarget
{
    /// <summary>How long <see cref="SummarizeAsync"/> waits for the servers to reach the same log position.</summary>
    private static readonly TimeSpan s_convergence = TimeSpan.FromSeconds(30);

    public ValueTask<object?> SampleAsync(CancellationToken cancellationToken) => ValueTask.FromResult<object?>(Counters.Take(_servers));

    /// <summary>
    /// The first server's meld figures over the window (every server melds every intention), and
    /// whether all servers, once they have melded the same log prefix, hold the same state hash.
    /// </summary>
    public async ValueTask<IReadOnlyList<(string Metric, double Value)>> SummarizeAsync(object? start, long committedTransactions, CancellationToken cancellationToken)
    {
        // Every server first melds what the others committed, so the first server's counts are whole.
        var agree = await StateHashesAgreeAsync(cancellationToken).ConfigureAwait(false);
        var end = Counters.Take(_servers);
        var begin = start as Counters ?? end;
        var final = end.Final - begin.Final;
        var premeld = end.Premeld - begin.Premeld;
        var group = end.Group - begin.Group;
        var melded = end.Commits + end.Aborts - begin.Commits - begin.Aborts;
        var rows = new List<(string, double)>
        {
            ("Servers", _servers.Length),
            ("Intentions", melded),
            ("MeldCommitted", end.Commits - begin.Commits),
            ("MeldAborted", end.Aborts - begin.Aborts),
            ("ReadOnlyCommitted", end.ReadOnly - begin.ReadOnly),
            ("ConflictZone", Ratio(end.Zone - begin.Zone, melded)),
            ("FinalMeldConflictZone", Ratio(final.Zone, final.Melds)),
            ("FinalMeldNodes/Intention", Ratio(final.Nodes, final.Melds)),
        };
        if (premeld.Melds > 0)
        {
            rows.Add(("PremeldNodes/Intention", Ratio(premeld.Nodes, premeld.Melds)));
        }

        if (group.Melds > 0)
        {
            // A group intention stands for two transactions (Hyder II Fig. 13 counts per transaction).
            rows.Add(("GroupMeldNodes/Intention", Ratio(group.Nodes, 2 * group.Melds)));
        }

        rows.Add(("AllocatedBytes/Commit", Ratio(end.Allocated - begin.Allocated, committedTransactions)));
        rows.Add(("Gen2Collections", end.Gen2 - begin.Gen2));

        // The CPU budget by stage (docs/server.md, "CPU budget"): the whole process, so with one
        // server the clients' own work is in the thread pool's figure.
        rows.AddRange(StageBudget.Rows(begin.Budget, end.Budget, committedTransactions));
        rows.Add(("StateHashesAgree", agree ? 1 : 0));
        return rows;
    }

    /// <summary>
    /// Waits until every server has melded the same prefix of the log (none is appending any more),
    /// then compares their state hashes at that position.
    /// </summary>
    public async Task<bool> StateHashesAgreeAsync(CancellationToken cancellationToken)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(s_convergence);
        while (true)
        {
            var ordinal = _servers.Max(s => s.LastMelded);
            var hashes = new List<Server.Engine.StateHash>();
            foreach (var server in _servers)
            {
                hashes.Add(await server.GetStateHashAsync(ordinal, timeout.Token).ConfigureAwait(false));
            }

            if (hashes.All(h => h.Ordinal == hashes[0].Ordinal))
            {
                return hashes.All(h => h.Hash == hashes[0].Hash);
            }

            // A server melded past the others meanwhile (a filler, a flush): ask again at the new end.
            await Task.Delay(10, timeout.Token).ConfigureAwait(false);
        }
    }

    private static double Ratio(long numerator, long denominator) => denominator == 0 ? 0 : Math.Round((double)numerator / denominator, 2);

    /// <summary>The first server's counters, and the process's allocations, at one instant.</summary>
    private sealed record Counters(long Commits, long Aborts, long ReadOnly, long Zone, MeldTotals Final, MeldTotals Premeld, MeldTotals Group, long Allocated, int Gen2, StageBudget Budget)
    {
        public static Counters Take(TransactionServer[] servers)
        {
            var server = servers[0];
            var aborts = 0L;
            foreach (var cause in Enum.GetValues<AbortCause>())
            {
                aborts += cause == AbortCause.None ? 0 : server.Metrics.AbortsOf(cause);
            }

            var premeld = default(MeldTotals);
            foreach (var op in server.Pipeline.PremeldOperators)
            {
                premeld += MeldTotals.Of(op.Counters);
            }

            return new Counters(
                server.Metrics.Commits,
                aborts,
                servers.Sum(s => s.Metrics.ReadOnlyCommits),
                server.Metrics.ConflictZoneTotal,
                MeldTotals.Of(server.Database.FinalMeld.Counters),
                premeld,
                server.Pipeline.GroupOperator is { } g ? MeldTotals.Of(g.Counters) : default,
                GC.GetTotalAllocatedBytes(precise: false),
                GC.CollectionCount(2),
                StageBudget.Take(server));
        }
    }

    /// <summary>A meld operator's counters, read while it runs (each field is a plain long written by its thread).</summary>
    private readonly record struct MeldTotals(long Melds, long Nodes, long Zone)
    {
        public static MeldTotals Of(MeldCounters c) => new(
            Volatile.Read(ref c.Melds),
            Volatile.Read(ref c.IntentionNodesVisited) + Volatile.Read(ref c.StateNodesVisited),
            Volatile.Read(ref c.ConflictZoneTotal));

        public static MeldTotals operator +(MeldTotals a, MeldTotals b) => new(a.Melds + b.Melds, a.Nodes + b.Nodes, a.Zone + b.Zone);

        public static MeldTotals operator -(MeldTotals a, MeldTotals b) => new(a.Melds - b.Melds, a.Nodes - b.Nodes, a.Zone - b.Zone);
    }
}
