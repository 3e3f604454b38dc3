using FsCheck;
using FsCheck.Fluent;
using Hyder.Tree.Tests.Oracle;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests;

/// <summary>
/// Group meld (Hyder II §4) over the random logs of <see cref="MeldPropertyTests"/>: every pair's
/// decisions are the fate-shared ones (the group commits iff both would, except that a second
/// intention depending on the first's write aborts alone), every state equals applying the
/// committed intentions in log order, with premeld before or after group meld too.
/// </summary>
public sealed class GroupMeldPropertyTests(ITestOutputHelper output)
{
    private static Gen<SimulationConfig> Configs(int maxTransactions, bool premeld, bool groupFirst) =>
        from seed in Gen.Choose(0, int.MaxValue)
        from keySpace in Gen.Elements(4, 16, 64, 300, 1000)
        from fill in Gen.Choose(0, 100)
        from transactions in Gen.Choose(maxTransactions / 4, maxTransactions)
        from zone in Gen.Elements(1, 4, 16, 64, 200)
        from maxOps in Gen.Choose(1, 10)
        from write in Gen.Choose(10, 60)
        from insertDelete in Gen.Choose(0, 30)
        from scan in Gen.Elements(0, 0, 5, 15)
        from levels in Gen.Choose(1, 15)
        from t in Gen.Choose(1, 5)
        from d in Gen.Choose(0, 20)
        select new SimulationConfig(
            seed, keySpace, keySpace * fill / 100, transactions, zone, maxOps, write, insertDelete, scan, levels,
            premeld ? t : 0, premeld ? d : 0, GroupMeld: true, GroupFirst: premeld && groupFirst);

    private void Run(Gen<SimulationConfig> gen, int cases)
    {
        long intentions = 0, groups = 0, conflicts = 0, fateShared = 0, premelded = 0, aborts = 0, judged = 0;
        var byCause = new SortedDictionary<Meld.AbortCause, long>();
        var property = Prop.ForAll(Arb.From(gen), cfg =>
        {
            var r = LogSimulation.Run(cfg);
            judged += r.DefinitionJudged;
            SimulationResult.Accumulate(byCause, r);
            intentions += r.Intentions;
            groups += r.Groups;
            conflicts += r.GroupConflicts;
            fateShared += r.FateShared;
            premelded += r.Premelded;
            aborts += r.Aborts;
            return true;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(cases).WithQuietOnSuccess(true), property);
        output.WriteLine($"{cases} logs, {intentions} intentions, {groups} pairs grouped, {conflicts} second parts aborted on the first's write, {fateShared} pairs aborted together by group meld, {premelded} premelded, {aborts} aborts");
        output.WriteLine($"{judged} decisions judged by the definitions, every commit allowed; false aborts by cause: {SerializabilityPropertyTests.Format(byCause)}");
        Assert.True(groups > intentions / 4, $"only {groups} pairs of {intentions} intentions were grouped: the generator does not exercise group meld");
        Assert.True(conflicts > 0, "no pair had a second depending on the first: the generator does not exercise the exception to fate sharing");
    }

    [Fact]
    public void GroupMeldDecidesTheFateSharedOutcomes() => Run(Configs(400, premeld: false, groupFirst: false), 120);

    [Fact]
    public void PremeldThenGroupMeld() => Run(Configs(300, premeld: true, groupFirst: false), 60);

    [Fact]
    public void GroupMeldThenPremeld() => Run(Configs(300, premeld: true, groupFirst: true), 60);

    [Fact]
    public void TwoRunsWithGroupMeldBuildByteIdenticalStates()
    {
        var property = Prop.ForAll(Arb.From(Configs(200, premeld: true, groupFirst: false)), cfg =>
            LogSimulation.Run(cfg, checkEveryState: false).StateHashes.SequenceEqual(LogSimulation.Run(cfg, checkEveryState: false).StateHashes));
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(20).WithQuietOnSuccess(true), property);
    }

    [Fact]
    [Trait("Category", "Stress")]
    public void GroupMeldOnManyLongLogs()
    {
        Run(Configs(3000, premeld: false, groupFirst: false), 100);
        Run(Configs(3000, premeld: true, groupFirst: false), 100);
        Run(Configs(3000, premeld: true, groupFirst: true), 100);
    }
}
