using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Hyder.Checker.Tests.Simulation;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Checker.Tests;

/// <summary>
/// The checker against simulated databases: a correct executor never draws an anomaly (no
/// false positives), correct snapshot isolation draws only write skew, and broken executors are
/// caught in most runs (the printed rate is the detection rate).
/// </summary>
public sealed class ExecutorPropertyTests(ITestOutputHelper output)
{
    private static Gen<SimConfig> Configs(ExecutorMode mode, int maxTxns, int minProcesses = 1, int kindsFrom = 0, int kindsTo = 2) =>
        from seed in Gen.Choose(0, int.MaxValue)
        from txns in Gen.Choose(maxTxns / 4, maxTxns)
        from processes in Gen.Choose(minProcesses, 8)
        from keys in Gen.Choose(1, 8)
        from maxOps in Gen.Choose(2, 6)
        from kinds in Gen.Choose(kindsFrom, kindsTo)
        from reads in Gen.Elements(0.25, 0.5, 0.75)
        from perKey in Gen.Elements(4, 16, 64)
        select new SimConfig(seed, txns, processes, mode, new WorkloadOptions
        {
            ActiveKeys = keys,
            MaxOps = maxOps,
            ReadShare = reads,
            MaxWritesPerKey = perKey,
            Lists = kinds != 1,
            Registers = kinds != 0,
        });

    private bool Report(SimConfig c, CheckResult r)
    {
        if (!r.Valid)
        {
            output.WriteLine($"{c}\n{r}");
        }

        return r.Valid;
    }

    [Property(MaxTest = 150)]
    public Property SerialExecutionNeverShowsAnAnomalyEvenInRealTime() =>
        Prop.ForAll(Configs(ExecutorMode.Serial, 300).ToArbitrary(), c =>
        {
            var r = HistoryChecker.Check(Executor.Run(c).History, new CheckOptions { Model = ConsistencyModel.StrictSerializable });
            return Report(c, r) && r.Anomalies.Count == 0;
        });

    [Fact]
    [Trait("Category", "Stress")]
    public void CorrectExecutorsStayCleanOnManyLongRuns()
    {
        Properties.Check(output, "serial, long", Configs(ExecutorMode.Serial, 3000), c =>
            Report(c, HistoryChecker.Check(Executor.Run(c).History, new CheckOptions { Model = ConsistencyModel.StrictSerializable })), tests: 300, seed: 0x10C);
        Properties.Check(output, "snapshot isolation, long", Configs(ExecutorMode.SnapshotIsolation, 3000, minProcesses: 2), c =>
            Report(c, HistoryChecker.Check(Executor.Run(c).History, new CheckOptions { Model = ConsistencyModel.SnapshotIsolation })), tests: 300, seed: 0x10C);
    }

    [Fact]
    public void SnapshotIsolationShowsWriteSkewAtMost()
    {
        int runs = 0, skewed = 0;
        Properties.Check(output, "snapshot isolation", Configs(ExecutorMode.SnapshotIsolation, 300, minProcesses: 2), c =>
        {
            var r = HistoryChecker.Check(Executor.Run(c).History, new CheckOptions { Model = ConsistencyModel.SnapshotIsolation });
            runs++;
            skewed += r.Has(Anomalies.G2Item) ? 1 : 0;
            return Report(c, r);
        }, tests: 150, seed: 0x51);
        output.WriteLine($"{skewed} of {runs} snapshot-isolation runs show write skew (G2-item), so are not serializable");
        Assert.True(skewed > 0, "no run showed write skew: the generator or the G2 search is broken");
    }

    /// <summary>
    /// Detection rates. <paramref name="logOrder"/> hands the checker the register order the store
    /// installed, as a database's log would. Runs in which the executor's bug never showed (no
    /// committed lost update, for the no-conflict-check executor) cannot be caught, so the rate is
    /// also printed for the runs that exercised it.
    /// </summary>
    [Theory]
    [InlineData(ExecutorMode.NoWriteConflictCheck, ConsistencyModel.Serializable, 2, false, 0.7)]
    [InlineData(ExecutorMode.NoWriteConflictCheck, ConsistencyModel.SnapshotIsolation, 0, false, 0.8)]
    [InlineData(ExecutorMode.NoWriteConflictCheck, ConsistencyModel.SnapshotIsolation, 1, false, 0.4)]
    [InlineData(ExecutorMode.NoWriteConflictCheck, ConsistencyModel.SnapshotIsolation, 1, true, 0.5)]
    [InlineData(ExecutorMode.StaleReads, ConsistencyModel.StrictSerializable, 2, false, 0.9)]
    [InlineData(ExecutorMode.StaleReads, ConsistencyModel.Serializable, 2, false, 0.7)]
    public void BrokenExecutorsAreCaughtInMostRuns(ExecutorMode mode, ConsistencyModel model, int kinds, bool logOrder, double atLeast)
    {
        int runs = 0, caught = 0, exercised = 0, exercisedCaught = 0;
        var names = new Dictionary<string, int>();
        Properties.Check(output, $"{mode} judged as {model}", Configs(mode, 300, minProcesses: 2, kindsFrom: kinds, kindsTo: kinds), c =>
        {
            var run = Executor.Run(c);
            var r = HistoryChecker.Check(run.History, new CheckOptions { Model = model, RegisterVersionOrder = logOrder ? run.RegisterOrder : null });
            runs++;
            caught += r.Valid ? 0 : 1;
            exercised += run.LostUpdates > 0 ? 1 : 0;
            exercisedCaught += run.LostUpdates > 0 && !r.Valid ? 1 : 0;
            foreach (var n in r.Violations.Select(v => v.Name).Distinct())
            {
                names[n] = names.GetValueOrDefault(n) + 1;
            }

            return true;
        }, tests: 150, seed: 0xB0B);
        var workload = kinds switch { 0 => "lists", 1 => "registers", _ => "lists and registers" };
        output.WriteLine($"{mode}, {workload}{(logOrder ? ", register order from the log" : "")}: caught in {caught} of {runs} runs ({100.0 * caught / runs:F1} %) as not {model}");
        output.WriteLine($"runs with a committed lost update: {exercised}, caught {exercisedCaught} ({(exercised == 0 ? 0 : 100.0 * exercisedCaught / exercised):F1} %)");
        output.WriteLine("runs per anomaly: " + string.Join(", ", names.OrderBy(n => n.Key, StringComparer.Ordinal).Select(n => $"{n.Key} {n.Value}")));
        Assert.True(caught >= atLeast * runs, $"only {caught} of {runs} runs caught");
    }
}
