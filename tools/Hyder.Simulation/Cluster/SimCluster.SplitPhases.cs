using Hyder.Server.Cluster;

namespace Hyder.Simulation.Cluster;

/// <summary>
/// Split phases (Doppel) in the simulation (<see cref="SimOptions.SplitPhases"/>): the cluster
/// settings turn them on with a length, threshold and labelled key drawn from the seed, half the
/// transactions also add to (or read) a few hot counters, and at the end every server's value of
/// each counter must be one the clients' outcomes allow (<see cref="CounterLedger"/>).
/// </summary>
internal sealed partial class SimCluster
{
    private readonly CounterLedger _ledger = new();

    /// <summary>The clients' view of the hot counters.</summary>
    public CounterLedger Ledger => _ledger;

    /// <summary>
    /// The settings with split phases on when the run asks for them: a phase of 2-16 ordinals
    /// (runs meld tens of ordinals, so phases must be short to end often), a hot threshold of 1-3
    /// operation lists, 1-3 split keys, and in half the seeds counter 0 labelled hot (split in
    /// every phase from the first ordinal on).
    /// </summary>
    private ClusterSettings WithSplitPhases(ClusterSettings settings)
    {
        if (!Options.SplitPhases)
        {
            return settings;
        }

        var r = Scheduler.Random;
        return settings with
        {
            SplitPhaseLength = 2 << r.Next(4),
            HotThreshold = 1 + r.Next(3),
            MaxSplitKeys = 1 + r.Next(3),
            HotKeys = r.Next(2) == 0 ? "" : Convert.ToHexString(CounterLedger.Key(0)),
        };
    }

    /// <summary>
    /// The counter steps of the next transaction: none without split phases (no random draw, so
    /// other runs keep their traces); else, in half the transactions, one or two steps, each a read
    /// (one in five), a decrement bounded at 0 (one in four of the rest) or an increment, of 1-1000.
    /// </summary>
    private CounterOp[] NextCounterOps()
    {
        if (!Options.SplitPhases || Scheduler.Random.Next(2) == 0)
        {
            return [];
        }

        var r = Scheduler.Random;
        var ops = new CounterOp[1 + r.Next(2)];
        for (var i = 0; i < ops.Length; i++)
        {
            var counter = r.Next(CounterLedger.Counters);
            ops[i] = r.Next(5) == 0
                ? new CounterOp(counter, 0, Read: true)
                : new CounterOp(counter, (r.Next(4) == 0 ? -1 : 1) * (1 + r.Next(1000)), Read: false);
        }

        return ops;
    }

    /// <summary>
    /// After settling: every server holds the same value of each counter (its tree with the side
    /// table's running values on top), and that value is one the clients' outcomes allow.
    /// </summary>
    private void CheckFeatures(IReadOnlyList<ServerNode> live)
    {
        // Stripes in use: acknowledged blocks on the chains the administrator added.
        if (Options.Stripes)
        {
            Stats.BlocksOnAddedStripes = Invariants.Acked.Keys.Count(a => ChainOf(a).Any(_stripeUnits.Contains));
        }

        CheckCounters(live);
    }

    private void CheckCounters(IReadOnlyList<ServerNode> live)
    {
        if (!Options.SplitPhases)
        {
            return;
        }

        for (var c = 0; c < CounterLedger.Counters; c++)
        {
            var value = live[0].CounterValue(c);
            foreach (var s in live.Skip(1))
            {
                if (s.CounterValue(c) != value)
                {
                    Violation($"after settling, {s.Name} holds counter c{c} = {s.CounterValue(c)} but {live[0].Name} holds {value}");
                    return;
                }
            }

            if (_ledger.Check(c, value) is { } wrong)
            {
                Violation(wrong);
                return;
            }

            Trace.Add($"counter c{c} = {value}");
        }

        Stats.CounterAddsCommitted = _ledger.AddsCommitted;
        Stats.CounterAddsUnknown = _ledger.AddsUnknown;
        Stats.CounterReads = _ledger.ReadsCommitted;
        foreach (var s in live)
        {
            if (s.SplitTable is { } table)
            {
                Stats.SplitStaged = Math.Max(Stats.SplitStaged, table.StagedOperations);
                Stats.SplitPhasesEnded = Math.Max(Stats.SplitPhasesEnded, table.Phases);
                Stats.SplitReconciledKeys = Math.Max(Stats.SplitReconciledKeys, table.ReconciledKeys);
            }

            Stats.Stashed += s.Server?.Metrics.Stashed ?? 0;
        }
    }
}
