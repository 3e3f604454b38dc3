using FsCheck;
using FsCheck.Fluent;
using Hyder.Tree.Tests.Oracle;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests;

/// <summary>
/// Meld against the oracle over random logs: decisions equal to the brute-force validator, the
/// state equal to the reference dictionary after every meld, balanced, and reproducible byte for
/// byte. FsCheck draws the log's shape; each shape carries the seed that builds it, so a failure
/// prints everything needed to replay it (and becomes a case in <see cref="MeldRegressionTests"/>).
/// </summary>
public sealed class MeldPropertyTests(ITestOutputHelper output)
{
    private static Gen<SimulationConfig> Configs(int maxTransactions, int maxZone) =>
        from seed in Gen.Choose(0, int.MaxValue)
        from keySpace in Gen.Elements(4, 16, 64, 300, 1000)
        from fill in Gen.Choose(0, 100)
        from transactions in Gen.Choose(maxTransactions / 4, maxTransactions)
        from zone in Gen.Elements(1, 4, 16, 64, maxZone)
        from maxOps in Gen.Choose(1, 10)
        from write in Gen.Choose(10, 60)
        from insertDelete in Gen.Choose(0, 30)
        from scan in Gen.Elements(0, 0, 5, 15)
        from levels in Gen.Choose(1, 15)
        select new SimulationConfig(seed, keySpace, keySpace * fill / 100, transactions, zone, maxOps, write, insertDelete, scan, levels);

    private void Run(Gen<SimulationConfig> gen, int cases)
    {
        long intentions = 0, ranges = 0, falseAborts = 0, aborts = 0, judged = 0, onWrites = 0;
        LogSimulation.TakeFalseAbortSample();
        var byCause = new SortedDictionary<Meld.AbortCause, long>();
        var property = Prop.ForAll(Arb.From(gen), cfg =>
        {
            var r = LogSimulation.Run(cfg);
            intentions += r.Intentions;
            ranges += r.RangeTransactions;
            falseAborts += r.FalseRangeAborts;
            aborts += r.Aborts;
            judged += r.DefinitionJudged;
            onWrites += r.FalseAbortsOnOwnWrites;
            SimulationResult.Accumulate(byCause, r);
            return true;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(cases).WithQuietOnSuccess(true), property);
        output.WriteLine($"{cases} logs, {intentions} intentions melded, {aborts} aborts; {ranges} with range scans, {falseAborts} false range aborts ({(ranges == 0 ? 0 : 100.0 * falseAborts / ranges):F2}%)");
        output.WriteLine($"by the isolation levels' definitions: {judged} decisions judged, every commit allowed; aborts the definition allows, by cause: {SerializabilityPropertyTests.Format(byCause)}; {onWrites} of them name a key the transaction wrote itself; first other: {LogSimulation.TakeFalseAbortSample() ?? "none"}");
        Assert.True(intentions > cases, "the logs melded almost nothing: the generator is broken");
    }

    [Fact]
    public void MeldAgreesWithTheValidatorAndTheModelOnRandomLogs() => Run(Configs(400, 256), 200);

    [Fact]
    public void MeldAgreesWithTheValidatorUnderConflictZonesOfSeveralHundred() =>
        Run(
            from c in Configs(1200, 400)
            select c with { MaxConcurrency = 400, KeySpace = Math.Max(c.KeySpace, 300), InitialKeys = Math.Max(c.KeySpace, 300) / 2 },
            30);

    [Fact]
    public void TwoRunsOfTheSameLogBuildByteIdenticalStates()
    {
        var property = Prop.ForAll(Arb.From(Configs(200, 64)), cfg =>
        {
            var a = LogSimulation.Run(cfg, checkEveryState: false);
            var b = LogSimulation.Run(cfg, checkEveryState: false);
            return a.StateHashes.SequenceEqual(b.StateHashes);
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(20).WithQuietOnSuccess(true), property);
    }

    [Fact]
    [Trait("Category", "Stress")]
    public void MeldAgreesWithTheValidatorOnManyLongLogs() => Run(Configs(3000, 400), 400);
}

/// <summary>Logs that once broke meld, kept as named cases.</summary>
public sealed class MeldRegressionTests
{
    public static TheoryData<SimulationConfig> Cases => new()
    {
        // A point read of an absent key whose range sat on a node that was not the pivot of the
        // asymmetric split: the state node's own key escaped both halves.
        new SimulationConfig(627817677, 16, 3, 352, 64, 9, 29, 26, 0, 5),

        // A transaction inserted and deleted a key another one inserted concurrently: at
        // serializable the insert still checks the key was absent (a point range), so a
        // concurrent insert of it is a phantom (OwnDeleteTests has the hand-written cases).
        new SimulationConfig(210984311, 16, 13, 364, 4, 9, 46, 21, 5, 7),

        // Three absent-key reads merged into one hull range: a false abort on a point read.
        new SimulationConfig(712435228, 64, 3, 276, 256, 7, 26, 23, 0, 5),

        // Premeld: a false write-write abort.
        new SimulationConfig(285950774, 8, 4, 261, 64, 8, 30, 12, 15, 6, 3, 8),

        // Premeld: a key the transaction deleted survived.
        new SimulationConfig(1403714078, 1000, 600, 299, 64, 10, 35, 24, 15, 7, 2, 1),

        // Premeld: a phantom it left to final meld was not checked there.
        new SimulationConfig(239847773, 1000, 380, 390, 200, 8, 40, 17, 15, 15, 4, 18),

        // Premeld: a retired node came back through a fresh node's stale read-only flag, and was
        // retired twice (d = 0: every premeld is against the state final meld is about to use).
        new SimulationConfig(636267904, 8, 4, 285, 200, 7, 39, 10, 0, 15, 5, 0),
        new SimulationConfig(1679756328, 8, 2, 270, 64, 6, 55, 23, 5, 15, 5, 0),

        // Premeld: a range premeld examined stayed on a node it then grafted where the range no
        // longer fits (the transaction's own delete had widened the node's interval).
        new SimulationConfig(1415369901, 64, 47, 188, 200, 3, 54, 15, 0, 15, 2, 1),

        // A read of an absent key next to a key the same transaction deleted: a missed phantom.
        new SimulationConfig(87126311, 16, 0, 2590, 16, 10, 45, 28, 5, 5),

        // Premeld: a missed phantom through final meld's serial shortcut.
        new SimulationConfig(144489967, 1000, 230, 1066, 200, 10, 14, 7, 0, 1, 3, 1),

        // Group meld: a blind write over the first part's read lost the read's check when the key
        // was gone (final meld's extract checked only the write).
        new SimulationConfig(419273705, 4, 3, 1231, 16, 7, 12, 11, 0, 11, GroupMeld: true),

        // Group meld: the first part's delete check moved onto the second's blind write, but
        // final meld grafted past it on the second's (newer) snapshot.
        new SimulationConfig(427986078, 4, 1, 824, 4, 3, 35, 17, 0, 10, GroupMeld: true),

        // Group meld, then premeld: premeld applied the second part's blind delete to the first
        // part's write of the key, and its check was lost.
        new SimulationConfig(1111561291, 64, 3, 2692, 200, 4, 53, 12, 0, 12, 4, 3, GroupMeld: true, GroupFirst: true),

        // Premeld, then group meld: premeld's path copy of a deleted key must still go.
        new SimulationConfig(999721876, 16, 6, 1189, 16, 10, 39, 30, 0, 6, 3, 0, GroupMeld: true),

        // Group meld, then premeld: the first part read an absent key next to a key the second
        // deleted blind; premeld grafted the first's node for that key, ranges and all, then
        // removed it for the second's delete, and the range's check went with it (a concurrent
        // insert of the absent key committed).
        new SimulationConfig(2017013770, 300, 279, 1360, 64, 5, 8, 9, 25, 15, 4, 10, GroupMeld: true, GroupFirst: true, CornerKeys: true, CornerScans: true, ChurnPercent: 3, BigPercent: 2, FlushPercent: 5, Lockstep: true),
    };

    [Theory]
    [MemberData(nameof(Cases))]
    public void RegressionLogStillMelds(SimulationConfig cfg) => LogSimulation.Run(cfg);
}
