using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Workloads;
using Xunit;

namespace Hyder.Ycsb.Tests;

public class MemoryTargetTests
{
    private static readonly KeySpace s_space = new(0, "t", ValueKind.Bytes, 0);
    private static readonly KeySpace s_counters = new(1, "c", ValueKind.Counter, 0);
    private static readonly byte[] s_x = [1];
    private static readonly byte[] s_y = [2];

    [Theory]
    [InlineData("Serializable", false)]
    [InlineData("RepeatableRead", false)]
    [InlineData("Snapshot", true)]
    [InlineData("ReadCommitted", true)]
    public async Task WriteSkewAbortsOnlyWhereReadsAreValidated(string level, bool bothCommit)
    {
        var isolation = Enum.Parse<IsolationLevel>(level);
        await using var target = await PreparedAsync();
        await using var t1 = await target.OpenSessionAsync(default);
        await using var t2 = await target.OpenSessionAsync(default);
        await t1.BeginAsync(isolation, false, default);
        await t2.BeginAsync(isolation, false, default);
        await t1.GetAsync(s_space, s_x, default);
        await t2.GetAsync(s_space, s_y, default);
        await t1.PutAsync(s_space, s_y, new byte[] { 9 }, default);
        await t2.PutAsync(s_space, s_x, new byte[] { 9 }, default);
        Assert.True((await t1.CommitAsync(default)).Committed);
        var second = await t2.CommitAsync(default);
        Assert.Equal(bothCommit, second.Committed);
        if (!bothCommit)
        {
            Assert.Equal(AbortCause.Serialization, second.Cause);
        }
    }

    [Fact]
    public async Task SnapshotIsolationAbortsTheSecondWriterOfAKey()
    {
        await using var target = await PreparedAsync();
        await using var t1 = await target.OpenSessionAsync(default);
        await using var t2 = await target.OpenSessionAsync(default);
        await t1.BeginAsync(IsolationLevel.Snapshot, false, default);
        await t2.BeginAsync(IsolationLevel.Snapshot, false, default);
        await t1.PutAsync(s_space, s_x, new byte[] { 1 }, default);
        await t2.PutAsync(s_space, s_x, new byte[] { 2 }, default);
        Assert.True((await t1.CommitAsync(default)).Committed);
        Assert.Equal(CommitOutcome.Aborted(AbortCause.WriteConflict), await t2.CommitAsync(default));
    }

    [Fact]
    public async Task SerializableScansSeePhantoms()
    {
        await using var target = await PreparedAsync();
        await using var t1 = await target.OpenSessionAsync(default);
        await using var t2 = await target.OpenSessionAsync(default);
        await t1.BeginAsync(IsolationLevel.Serializable, false, default);
        Assert.Equal(2, await t1.ScanAsync(s_space, new byte[] { 0 }, 10, default));
        await t2.BeginAsync(IsolationLevel.Serializable, false, default);
        Assert.True(await t2.InsertAsync(s_space, new byte[] { 1, 5 }, new byte[] { 0 }, default));
        Assert.True((await t2.CommitAsync(default)).Committed);
        await t1.PutAsync(s_space, new byte[] { 7 }, new byte[] { 0 }, default);
        Assert.False((await t1.CommitAsync(default)).Committed);
    }

    [Fact]
    public async Task DriverRunsTheOperationCountAndCountsEveryOutcome()
    {
        await using var target = new MemoryReferenceTarget();
        var workload = new CoreWorkload("a", CoreMix.Preset('a'), 2_000, 100, new Generators.DistributionSettings(), IsolationLevel.Serializable);
        var settings = new DriverSettings { Threads = 2, InFlightPerThread = 4, OperationCount = 20_000, ValueSize = 16, StatusInterval = TimeSpan.FromMilliseconds(50) };
        var sink = new CollectingSink();
        await LoadAsync(target, workload, settings);
        Assert.Equal(2_000, target.Count("usertable"));

        var runner = new PhaseRunner(target, workload.KeySpaces, settings, sink, new CounterBounds(startsAtZero: true));
        var result = await runner.RunAsync("run", Enumerable.Range(0, 2).Select(w => workload.CreateSource(5, w)).ToArray(), default);
        var m = result.Totals;
        Assert.Equal(20_000, m.Committed + m.GaveUp);
        Assert.Equal(m.Committed + m.GaveUp, m[Series.Transaction].TotalCount);
        Assert.Equal(m.Committed + m.Aborted, m[Series.Commit].TotalCount);
        Assert.Equal(m[Series.Commit].TotalCount, m[Series.Read].TotalCount + m[Series.Update].TotalCount);
        Assert.Equal(0, m.NotFound);
        Assert.NotEmpty(sink.Statuses);
        Assert.Equal(0, sink.Statuses[^1].InFlight);
    }

    [Fact]
    public async Task HotCounterEndsAtExactlyTheCommittedIncrements()
    {
        await using var target = new MemoryReferenceTarget();
        var workload = new Incr1Workload(100, 1.0, IsolationLevel.Serializable);
        var settings = new DriverSettings { Threads = 2, InFlightPerThread = 8, OperationCount = 5_000, MaxRetries = 1_000 };
        await LoadAsync(target, workload, settings);
        var runner = new PhaseRunner(target, workload.KeySpaces, settings, new CollectingSink(), new CounterBounds(startsAtZero: true));
        var result = await runner.RunAsync("run", Enumerable.Range(0, 2).Select(w => workload.CreateSource(6, w)).ToArray(), default);
        Assert.Equal(result.Totals.Committed, target.Counter("counters", new KeyCodec(4, true).Encode(0)));
        Assert.Equal(5_000, result.Totals.Committed);
    }

    [Fact]
    public async Task RateLimitHoldsTheThroughputDown()
    {
        await using var target = new MemoryReferenceTarget();
        var workload = new CoreWorkload("c", CoreMix.Preset('c'), 100, 100, new Generators.DistributionSettings(), IsolationLevel.Serializable);
        var settings = new DriverSettings { Threads = 2, InFlightPerThread = 2, TargetThroughput = 500, Duration = TimeSpan.FromSeconds(1), ValueSize = 8 };
        await LoadAsync(target, workload, settings);
        var runner = new PhaseRunner(target, workload.KeySpaces, settings, new CollectingSink(), new CounterBounds(startsAtZero: true));
        var result = await runner.RunAsync("run", Enumerable.Range(0, 2).Select(w => workload.CreateSource(7, w)).ToArray(), default);
        var rate = result.Totals.Committed / result.RunTime.TotalSeconds;
        Assert.InRange(rate, 350, 560);
    }

    internal static async Task LoadAsync(ITarget target, Workload workload, DriverSettings settings)
    {
        await target.PrepareAsync(workload.KeySpaces, reset: true, default);
        var source = new LoadSource(workload.KeySpaces, 50);
        var loadSettings = settings with { OperationCount = null, Duration = null, TargetThroughput = 0 };
        var runner = new PhaseRunner(target, workload.KeySpaces, loadSettings, new CollectingSink(), new CounterBounds(startsAtZero: true));
        var result = await runner.RunAsync("load", Enumerable.Repeat<ITransactionSource>(source, settings.Threads).ToArray(), default);
        Assert.Equal(source.TotalRecords, result.CommittedOperations);
    }

    private static async Task<MemoryReferenceTarget> PreparedAsync()
    {
        var target = new MemoryReferenceTarget();
        await target.PrepareAsync([s_space, s_counters], reset: true, default);
        await using var session = await target.OpenSessionAsync(default);
        await session.BeginAsync(IsolationLevel.Serializable, false, default);
        await session.PutAsync(s_space, s_x, new byte[] { 0 }, default);
        await session.PutAsync(s_space, s_y, new byte[] { 0 }, default);
        Assert.True((await session.CommitAsync(default)).Committed);
        return target;
    }

    internal sealed class CollectingSink : IStatusSink
    {
        public List<StatusSnapshot> Statuses { get; } = [];

        public void Status(StatusSnapshot snapshot)
        {
            lock (Statuses)
            {
                Statuses.Add(snapshot with { IntervalMeasurements = new Measurements() });
            }
        }

        public void Finished(PhaseResult result)
        {
        }
    }
}
