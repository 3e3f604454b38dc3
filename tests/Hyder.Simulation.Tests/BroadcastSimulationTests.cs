using Hyder.Simulation.Cluster;
using Hyder.Simulation.Faults;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Simulation.Tests;

/// <summary>Intention broadcast in the simulation (docs/simulation.md, "Intention broadcast").</summary>
public sealed class BroadcastSimulationTests(ITestOutputHelper output)
{
    /// <summary>The long mode's refusal back-off: the same faults in a third of the steps (docs/simulation.md, "Tests").</summary>
    private static readonly TimeSpan Backoff = TimeSpan.FromMilliseconds(20);

    private (List<string> Failures, BroadcastStats Broadcast, int Committed) RunSeeds(int seeds, Func<long, SimOptions> options)
    {
        var failures = new List<string>();
        var totals = new SimStats();
        for (var seed = 1; seed <= seeds; seed++)
        {
            var result = Simulation.Run(options(seed));
            totals.Add(result.Stats);
            if (!result.Passed)
            {
                failures.Add(result.Describe());
                foreach (var line in result.RecentTrace.TakeLast(20))
                {
                    output.WriteLine("  " + line);
                }
            }
        }

        output.WriteLine($"{seeds} seeds: {totals.Committed} commits; {totals.Broadcast}");
        return (failures, totals.Broadcast, totals.Committed);
    }

    [Fact]
    public void ForgedLostDuplicatedAndReorderedBroadcastBlocksLeaveEveryInvariantIntact()
    {
        var (failures, b, committed) = RunSeeds(25, seed => new SimOptions { Seed = seed, Faults = FaultProfile.Broadcast, RefusalBackoff = Backoff });
        Assert.Empty(failures);
        Assert.True(committed > 25 * 10, $"only {committed} commits");

        // Every fault of the broadcast path was injected, and readers took forged blocks of each kind.
        Assert.True(b.Lost > 0, "no broadcast copy lost");
        Assert.True(b.Duplicated > 0, "no broadcast copy duplicated");
        Assert.True(b.Delayed > 0, "no broadcast copy delayed");
        Assert.True(b.Reordered > 0, "no broadcast copy reordered");
        foreach (var kind in Enum.GetValues<ForgeKind>())
        {
            Assert.True(b.Forged[(int)kind] > 0, $"no {kind} forgery delivered");
            Assert.True(b.ForgedTaken[(int)kind] > 0, $"no {kind} forgery reached a reader");
        }

        // Broadcast is used: readers took real blocks from their hubs.
        Assert.True(b.Taken > b.Published / 2, $"readers took {b.Taken} real blocks of {b.Published} published");
    }

    [Fact]
    public void ServersThatTrustBroadcastTakeBlocksInsteadOfReadingAndPassWithHonestFaults()
    {
        // The optimisation path: a peer's block replaces the log read. Honest faults only (lost,
        // duplicated, delayed and reordered copies, partitions, crashes): every invariant holds.
        var (failures, b, _) = RunSeeds(15, seed => new SimOptions { Seed = seed, Faults = FaultProfile.Default, Broadcast = true, TrustBroadcast = true, RefusalBackoff = Backoff });
        Assert.Empty(failures);
        Assert.True(b.Taken > b.Published / 2, $"readers took {b.Taken} blocks of {b.Published} published");
        Assert.True(b.Lost > 0 && b.Duplicated > 0 && b.Reordered > 0, b.ToString());
        Assert.Equal(0, b.Forged.Sum());
    }

    [Fact]
    public void AForgedBlockIsCaughtWhenServersTrustBroadcast()
    {
        // The mutation: servers that take a peer's block without the log's word meld forged blocks,
        // and the state hashes catch it.
        var (caught, example) = Mutations.Run(6, seed => new SimOptions { Seed = seed, Faults = FaultProfile.Broadcast, TrustBroadcast = true });

        output.WriteLine($"caught in {caught} of 6 seeds; e.g. {example}");
        Assert.True(caught >= 4, $"caught in only {caught} of 6 seeds");
        Assert.Contains("--trust-broadcast", example);
    }

    [Fact]
    public void ABroadcastSeedReplaysToTheSameTrace()
    {
        var options = new SimOptions { Seed = 7, Faults = FaultProfile.Broadcast };
        var first = Simulation.Run(options);
        var second = Simulation.Run(options);
        Assert.True(first.Passed, first.Describe());
        Assert.Equal(first.TraceHash, second.TraceHash);
        Assert.Equal(first.Steps, second.Steps);
        Assert.Equal(first.Stats.Broadcast.ToString(), second.Stats.Broadcast.ToString());
        Assert.Contains("--broadcast", new SimOptions { Seed = 7, Broadcast = true }.ReplayLine);
    }
}
