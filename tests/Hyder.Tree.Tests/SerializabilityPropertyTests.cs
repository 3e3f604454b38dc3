using FsCheck;
using FsCheck.Fluent;
using Hyder.Tree.Meld;
using Hyder.Tree.Tests.Oracle;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests;

/// <summary>
/// Every decision judged by the isolation levels' definitions (<see cref="DefinitionOracle"/>:
/// only what each transaction observed, never the engine's rules), on logs that reach the corners
/// the classic generators miss: keys of 1 to 24 bytes that are prefixes of one another or share
/// their first 8 bytes, scans with exclusive, open, empty and out-of-range bounds and unlimited
/// whole-tree scans, runs of inserts and deletes that rebalance, transactions of hundreds to
/// thousands of operations, a key inserted, deleted and inserted again, flush intentions — through
/// final meld, premeld, group meld and both orders, with every intention also encoded, decoded and
/// melded by a peer in lockstep. A commit the definition forbids fails the test; an abort it
/// allows is counted by cause and printed.
/// </summary>
public sealed class SerializabilityPropertyTests(ITestOutputHelper output)
{
    private static Gen<SimulationConfig> Configs(int maxTransactions) =>
        from seed in Gen.Choose(0, int.MaxValue)
        from keySpace in Gen.Elements(4, 16, 64, 300)
        from fill in Gen.Choose(0, 100)
        from transactions in Gen.Choose(maxTransactions / 4, maxTransactions)
        from zone in Gen.Elements(1, 4, 16, 64)
        from maxOps in Gen.Choose(1, 12)
        from write in Gen.Choose(5, 50)
        from insertDelete in Gen.Choose(0, 40)
        from scan in Gen.Elements(0, 5, 15, 25)
        from levels in Gen.Choose(1, 15)
        from pipeline in Gen.Choose(0, 4)
        from t in Gen.Choose(1, 4)
        from d in Gen.Choose(0, 10)
        from cornerKeys in Gen.Elements(true, true, false)
        from runs in Gen.Elements(0, 1, 3)
        from churn in Gen.Elements(0, 3, 10)
        from big in Gen.Elements(0, 0, 2)
        from flush in Gen.Elements(0, 5)
        select new SimulationConfig(
            seed, keySpace, keySpace * fill / 100, transactions, zone, maxOps, write, insertDelete, scan, levels,
            PremeldThreads: pipeline is 1 or 3 or 4 ? t : 0,
            Distance: pipeline is 1 or 3 or 4 ? d : 0,
            GroupMeld: pipeline >= 2,
            GroupFirst: pipeline == 4,
            CornerKeys: cornerKeys,
            CornerScans: true,
            RunPercent: runs,
            ChurnPercent: churn,
            BigPercent: big,
            FlushPercent: flush,
            Lockstep: true);

    /// <summary>"WriteWrite 12, Phantom 3", or "none".</summary>
    internal static string Format(SortedDictionary<AbortCause, long> byCause) =>
        byCause.Count == 0 ? "none" : string.Join(", ", byCause.Select(p => $"{p.Key} {p.Value:N0}"));

    private void Run(Gen<SimulationConfig> gen, int cases)
    {
        long intentions = 0, judged = 0, aborts = 0, commits = 0, onWrites = 0, group = 0;
        LogSimulation.TakeFalseAbortSample();
        var byCause = new SortedDictionary<AbortCause, long>();
        var property = Prop.ForAll(Arb.From(gen), cfg =>
        {
            var r = LogSimulation.Run(cfg);
            intentions += r.Intentions;
            judged += r.DefinitionJudged;
            aborts += r.Aborts;
            commits += r.Commits;
            onWrites += r.FalseAbortsOnOwnWrites;
            group += r.FalseAbortsOfGroups;
            SimulationResult.Accumulate(byCause, r);
            return true;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(cases).WithQuietOnSuccess(true), property);
        var falseAborts = byCause.Values.Sum();
        output.WriteLine($"{cases} logs, {intentions:N0} intentions, {commits:N0} commits, {aborts:N0} aborts; {judged:N0} decisions judged by the definitions, every commit allowed");
        output.WriteLine($"aborts the definition allows (false aborts), by cause: {Format(byCause)} ({(aborts == 0 ? 0 : 100.0 * falseAborts / aborts):F1} % of aborts)");
        output.WriteLine($"  {onWrites:N0} name a key the transaction wrote itself (its write's version check, or a scanned range over it), {group:N0} were made by group meld (a pair's fates tied), {falseAborts - onWrites - group:N0} other");
        output.WriteLine($"  first other: {LogSimulation.TakeFalseAbortSample() ?? "none"}");
        Assert.True(judged >= intentions && intentions > cases, "the logs melded almost nothing: the generator is broken");
    }

    [Fact]
    public void EveryCommitOnCornerLogsIsAllowedByItsIsolationLevel() => Run(Configs(250), 120);

    [Fact]
    [Trait("Category", "Stress")]
    public void EveryCommitOnManyLongCornerLogsIsAllowedByItsIsolationLevel() => Run(Configs(1500), 800);
}
