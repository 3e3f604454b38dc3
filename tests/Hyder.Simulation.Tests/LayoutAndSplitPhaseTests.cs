using Hyder.Simulation.Cluster;
using Hyder.Simulation.Faults;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Simulation.Tests;

/// <summary>
/// Split phases (Doppel), stripes and unit replacement in the simulation (docs/simulation.md,
/// "Split phases, stripes, unit replacement"): a set of seeds of each passes every invariant and
/// the checker, and the feature really ran (operations staged, stripes added, units replaced).
/// </summary>
public sealed class LayoutAndSplitPhaseTests(ITestOutputHelper output)
{
    private (SimStats Totals, List<string> Failures) RunSeeds(int first, int count, Func<long, SimOptions> options)
    {
        var totals = new SimStats();
        var failures = new List<string>();
        for (long seed = first; seed < first + count; seed++)
        {
            var result = Simulation.Run(options(seed));
            totals.Add(result.Stats);
            if (!result.Passed)
            {
                failures.Add(result.Describe());
                foreach (var line in result.RecentTrace.TakeLast(30))
                {
                    output.WriteLine("  " + line);
                }
            }
        }

        output.WriteLine($"{count} seeds: {totals}");
        return (totals, failures);
    }

    [Fact]
    public void SplitPhaseSeedsFoldHotCountersExactlyUnderFaults()
    {
        var (totals, failures) = RunSeeds(1, 30, seed => new SimOptions { Seed = seed, Faults = FaultProfile.Default, SplitPhases = true });
        Assert.Empty(failures);

        // Not vacuous: counters were added to and read, the side tables staged Adds and
        // reconciled keys at phase ends, and readers of split counters were stashed.
        Assert.True(totals.CounterAddsCommitted > 50, $"only {totals.CounterAddsCommitted} counter Adds committed");
        Assert.True(totals.CounterReads > 0, "no counter read committed");
        Assert.True(totals.SplitStaged > 0, "no Add was staged in a side table");
        Assert.True(totals.SplitPhasesEnded > 0, "no split phase ended");
        Assert.True(totals.SplitReconciledKeys > 0, "no key was reconciled");
        Assert.True(totals.Stashed > 0, "no transaction was stashed");
        Assert.True(totals.FailCauses.ContainsKey("aborted by meld (BoundViolated)"), "no bounded decrement aborted");
    }

    [Fact]
    public void StripedLogsGrowByStripesUnderFaults()
    {
        var (totals, failures) = RunSeeds(1, 20, seed => new SimOptions { Seed = seed, Faults = FaultProfile.Default, Stripes = true });
        Assert.Empty(failures);
        Assert.True(totals.StripesAdded >= 10, $"only {totals.StripesAdded} stripes added");
        Assert.True(totals.BlocksOnAddedStripes > 50, $"only {totals.BlocksOnAddedStripes} acknowledged blocks on added chains");
    }

    [Fact]
    public void UnitsDieForGoodAndAreReplacedUnderFaults()
    {
        var (totals, failures) = RunSeeds(1, 30, seed => new SimOptions { Seed = seed, Faults = FaultProfile.Default, ReplaceUnits = true });
        Assert.Empty(failures);
        Assert.True(totals.UnitsReplaced >= 10, $"only {totals.UnitsReplaced} units replaced");
        Assert.True(totals.PositionsCheckedAcrossReplacements > 100, $"only {totals.PositionsCheckedAcrossReplacements} positions compared across replacements");
    }

    [Fact]
    public void AllThreeTogetherPassAndReplayToTheSameTrace()
    {
        var (totals, failures) = RunSeeds(1, 10, Options);
        Assert.Empty(failures);
        Assert.True(totals.SplitStaged > 0 && totals.StripesAdded > 0 && totals.UnitsReplaced > 0, totals.ToString());
        var a = Simulation.Run(Options(3));
        var b = Simulation.Run(Options(3));
        Assert.Equal(a.TraceHash, b.TraceHash);
        Assert.Equal(a.Steps, b.Steps);
        Assert.EndsWith("--split-phases --stripes --replace-units", a.Options.ReplayLine, StringComparison.Ordinal);

        static SimOptions Options(long seed) => new() { Seed = seed, Faults = FaultProfile.Default, SplitPhases = true, Stripes = true, ReplaceUnits = true };
    }

    [Fact]
    public void TheCounterLedgerAllowsEachUnknownAddOnceAndNoLostAdd()
    {
        var ledger = new CounterLedger();
        ledger.Record([new CounterOp(0, 5, false), new CounterOp(1, 3, false)], TxnOutcome.Ok);
        ledger.Record([new CounterOp(0, 7, false)], TxnOutcome.Ok);
        ledger.Record([new CounterOp(0, 100, false)], TxnOutcome.Info);
        ledger.Record([new CounterOp(0, -20, false)], TxnOutcome.Info);
        ledger.Record([new CounterOp(0, 1000, false)], TxnOutcome.Fail);

        Assert.Null(ledger.Check(0, 12));
        Assert.Null(ledger.Check(0, 112));
        Assert.Null(ledger.Check(0, 92));
        Assert.Null(ledger.Check(1, 3));
        Assert.Contains("double-counted", ledger.Check(0, 212));
        Assert.NotNull(ledger.Check(0, 17));
        Assert.NotNull(ledger.Check(0, 7));
        Assert.NotNull(ledger.Check(0, 1012));
        Assert.NotNull(ledger.Check(1, 0));
        Assert.Contains("bounded at 0", ledger.Check(2, -1));
    }
}
