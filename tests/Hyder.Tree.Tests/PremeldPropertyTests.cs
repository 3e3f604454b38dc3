using FsCheck;
using FsCheck.Fluent;
using Hyder.Tree.Tests.Oracle;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests;

/// <summary>
/// Premeld (Hyder II §3) is judged by one property: it never changes a decision or the resulting
/// contents. The random logs of <see cref="MeldPropertyTests"/> run through the single-threaded
/// reference pipeline with many (t, d); every decision is checked against the validator and every
/// state against the reference dictionary, exactly as with final meld alone.
/// </summary>
public sealed class PremeldPropertyTests(ITestOutputHelper output)
{
    private static Gen<SimulationConfig> Configs(int maxTransactions) =>
        from seed in Gen.Choose(0, int.MaxValue)
        from keySpace in Gen.Elements(8, 64, 300, 1000)
        from fill in Gen.Choose(10, 100)
        from transactions in Gen.Choose(maxTransactions / 4, maxTransactions)
        from zone in Gen.Elements(4, 16, 64, 200)
        from maxOps in Gen.Choose(1, 10)
        from write in Gen.Choose(10, 60)
        from insertDelete in Gen.Choose(0, 30)
        from scan in Gen.Elements(0, 5, 15)
        from levels in Gen.Choose(1, 15)
        from t in Gen.Choose(1, 5)
        from d in Gen.Choose(0, 20)
        select new SimulationConfig(seed, keySpace, keySpace * fill / 100, transactions, zone, maxOps, write, insertDelete, scan, levels, t, d);

    [Fact]
    public void PremeldNeverChangesADecisionOrTheContents()
    {
        long intentions = 0, premelded = 0;
        var property = Prop.ForAll(Arb.From(Configs(400)), cfg =>
        {
            var r = LogSimulation.Run(cfg);
            intentions += r.Intentions;
            premelded += r.Premelded;
            return true;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(120).WithQuietOnSuccess(true), property);
        output.WriteLine($"{intentions} intentions, {premelded} premelded");
        Assert.True(premelded > intentions / 10, $"only {premelded} of {intentions} intentions were premelded: the generator does not exercise premeld");
    }

    [Fact]
    public void TwoRunsWithTheSameTAndDBuildByteIdenticalStates()
    {
        var property = Prop.ForAll(Arb.From(Configs(200)), cfg =>
            LogSimulation.Run(cfg, checkEveryState: false).StateHashes.SequenceEqual(LogSimulation.Run(cfg, checkEveryState: false).StateHashes));
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(20).WithQuietOnSuccess(true), property);
    }

    [Fact]
    [Trait("Category", "Stress")]
    public void PremeldNeverChangesADecisionOnManyLongLogs()
    {
        long intentions = 0, judged = 0;
        var byCause = new SortedDictionary<Meld.AbortCause, long>();
        var property = Prop.ForAll(Arb.From(Configs(3000)), cfg =>
        {
            var r = LogSimulation.Run(cfg);
            intentions += r.Intentions;
            judged += r.DefinitionJudged;
            SimulationResult.Accumulate(byCause, r);
            return true;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(300).WithQuietOnSuccess(true), property);
        output.WriteLine($"{intentions} intentions; {judged} decisions judged by the definitions, every commit allowed; false aborts by cause: {SerializabilityPropertyTests.Format(byCause)}");
    }
}
