using Hyder.Server.Cluster;
using Hyder.Server.Grpc;
using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Targets.Hyder;
using Hyder.Ycsb.Workloads;
using Xunit;

namespace Hyder.Ycsb.Tests;

/// <summary>
/// Every workload against a real Hyder cluster, embedded and over gRPC: the driver's counts agree
/// with the servers' own, counters end at exactly the committed increments, and no read of a
/// counter sees a value the increments could not have produced.
/// </summary>
public class HyderTargetTests
{
    private const int Transactions = 300;

    [Theory]
    [InlineData("a", 1, false)]
    [InlineData("b", 1, false)]
    [InlineData("c", 1, false)]
    [InlineData("d", 1, false)]
    [InlineData("e", 1, false)]
    [InlineData("f", 2, false)]
    [InlineData("tx", 2, true)]
    [InlineData("incr1", 1, false)]
    [InlineData("like", 2, true)]
    public async Task EveryWorkloadCompletesOnAnEmbeddedClusterWithConsistentCounts(string name, int servers, bool groupMeld)
    {
        var workload = Create(name);
        var settings = Settings();
        await using var cluster = await HyderEmbeddedTarget.StartAsync(
            new EmbeddedClusterSettings { Servers = servers, Cluster = new ClusterSettings { GroupMeld = groupMeld }, Fsync = false, Sessions = settings.Sessions },
            default);
        var target = new CountingTarget(cluster);
        var result = await LoadAndRunAsync(target, workload, settings);

        var m = result.Totals;
        var hyder = result.Target.ToDictionary(r => r.Metric, r => r.Value);
        Assert.Equal(Transactions, m.Committed + m.GaveUp);
        Assert.Equal(m.Committed + m.Aborted, hyder["Intentions"] + hyder["ReadOnlyCommitted"]);
        Assert.Equal(m.Committed, hyder["MeldCommitted"] + hyder["ReadOnlyCommitted"]);
        Assert.Equal(m.Aborted, hyder["MeldAborted"]);
        Assert.Equal(servers, hyder["Servers"]);
        Assert.Equal(1, hyder["StateHashesAgree"]);
        Assert.Equal(0, m.InconsistentReads);
        if (name == "c")
        {
            Assert.Equal(0, hyder["Intentions"]);
        }

        if (name == "tx")
        {
            // The CPU budget names each executor stage on its own (docs/server.md, "CPU budget"):
            // 300 transactions that write are enough for the sampling (one stretch in 8 per stage
            // and thread) to time each stage.
            foreach (var stage in new[] { "execute", "validate", "encode", "process" })
            {
                Assert.True(hyder[$"CpuUs/Commit({stage})"] > 0, $"no CPU counted for {stage}");
            }
        }

        await AssertCountersHoldTheCommittedIncrementsAsync(target, workload);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task CommutativeAddsOfOneHotCounterNeverConflict(bool groupMeld)
    {
        var workload = new Incr1Workload(20, 1.0, IsolationLevel.Serializable);
        var settings = Settings() with { MaxRetries = 0 };
        await using var cluster = await HyderEmbeddedTarget.StartAsync(
            new EmbeddedClusterSettings { Cluster = new ClusterSettings { GroupMeld = groupMeld }, Commutative = true, Fsync = false, Sessions = settings.Sessions },
            default);
        Assert.Contains("Add as a commutative operation", cluster.Description, StringComparison.Ordinal);
        var target = new CountingTarget(cluster);
        var result = await LoadAndRunAsync(target, workload, settings);

        // Eight sessions increment the one counter at once and none may abort, even without retries.
        Assert.Equal(Transactions, result.Totals.Committed);
        Assert.Equal(0, result.Totals.Aborted);
        await AssertCountersHoldTheCommittedIncrementsAsync(target, workload);
        Assert.Equal(Transactions, target.CommittedIncrements);
    }

    /// <summary>
    /// Bounded stock levels, as commutative Adds and as read-modify-writes: no level ever leaves
    /// [0, cap], orders on empty shelves are turned down (counted, not retried, not aborts) and the
    /// levels hold exactly the committed orders and restocks.
    /// </summary>
    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task StockLevelsStayInTheirBoundsAndOrdersOnEmptyShelvesAreTurnedDown(bool commutative)
    {
        const long Cap = 20;
        var workload = new StockWorkload(20, 0.99, Cap, 0.8, 0.3, IsolationLevel.Serializable);
        var settings = Settings();
        await using var cluster = await HyderEmbeddedTarget.StartAsync(
            new EmbeddedClusterSettings { Servers = 2, Commutative = commutative, Fsync = false, Sessions = settings.Sessions },
            default);
        var target = new CountingTarget(cluster);
        var result = await LoadAndRunAsync(target, workload, settings);

        var m = result.Totals;
        var hyder = result.Target.ToDictionary(r => r.Metric, r => r.Value);
        Assert.Equal(Transactions, m.Committed + m.GaveUp + m.BoundRejected);
        Assert.True(m.BoundRejected > 0, "no order met an empty shelf");
        Assert.Equal(0, m.AbortsOf(Metrics.AbortCause.BoundViolated));
        Assert.Equal(0, m.InconsistentReads);
        Assert.Equal(1, hyder["StateHashesAgree"]);
        if (commutative)
        {
            // Operations never conflict: the only aborts meld makes are the bounds'.
            Assert.Equal(0, m.Aborted);
            Assert.Equal(m.BoundRejected, hyder["MeldAborted"]);
        }
        else
        {
            // Read-modify-writes check the bound on the value read: a turned-down order never reaches the log.
            Assert.Equal(m.Aborted, hyder["MeldAborted"]);
        }

        await AssertCountersHoldTheCommittedIncrementsAsync(target, workload);
        await using var session = await target.OpenSessionAsync(default);
        await session.BeginAsync(IsolationLevel.Serializable, readOnly: true, default);
        var keys = new KeyCodec(4, hashed: true);
        for (var i = 0L; i < 20; i++)
        {
            Assert.InRange(await session.ReadCounterAsync(workload.KeySpaces[0], keys.Encode(i), default) ?? -1, 0, Cap);
        }
    }

    [Fact]
    public async Task PremeldRunsReportPremeldWork()
    {
        var workload = Create("tx");
        var settings = Settings();
        await using var cluster = await HyderEmbeddedTarget.StartAsync(
            new EmbeddedClusterSettings { Cluster = new ClusterSettings { PremeldThreads = 2, Distance = 1 }, Fsync = false, Sessions = settings.Sessions },
            default);
        Assert.Contains("(premeld t=2 d=1)", cluster.Description, StringComparison.Ordinal);
        var result = await LoadAndRunAsync(cluster, workload, settings);
        var hyder = result.Target.ToDictionary(r => r.Metric, r => r.Value);
        Assert.Equal(result.Totals.Committed, hyder["MeldCommitted"] + hyder["ReadOnlyCommitted"]);

        // Whether the run premelded anything depends on timing: premeld has work only when an
        // intention's snapshot is older than its input state (v − t·d − 1), and a fast meld thread
        // can keep every snapshot that fresh. Eight writers that all begin before any commits give
        // ordinals S+1..S+8 on snapshot S, so S+4..S+8 are premelded (t·d + 1 = 3) on any machine.
        const int writers = 8;
        var start = await cluster.SampleAsync(default);
        var sessions = new List<ITargetSession>();
        try
        {
            var keys = new KeyCodec(4, hashed: true);
            for (var i = 0; i < writers; i++)
            {
                var session = await cluster.OpenSessionAsync(default);
                sessions.Add(session);
                await session.BeginAsync(IsolationLevel.Serializable, readOnly: false, default);
                await session.PutAsync(workload.KeySpaces[0], keys.Encode(i), new byte[16], default);
            }

            var outcomes = await Task.WhenAll(sessions.Select(s => s.CommitAsync(default).AsTask()));
            Assert.All(outcomes, o => Assert.True(o.Committed, $"aborted: {o.Cause}"));
        }
        finally
        {
            foreach (var session in sessions)
            {
                await session.DisposeAsync();
            }
        }

        var burst = (await cluster.SummarizeAsync(start, writers, default)).ToDictionary(r => r.Metric, r => r.Value);
        Assert.Equal(writers, burst["MeldCommitted"]);
        Assert.True(burst.GetValueOrDefault("PremeldNodes/Intention") > 0, "no intention of the burst was premelded");
    }

    [Theory]
    [InlineData("tx")]
    [InlineData("like")]
    [InlineData("stock")]
    public async Task TheClientTargetDrivesARunningServerOverGrpc(string name)
    {
        var workload = Create(name);
        var settings = Settings();
        await using var cluster = await HyderEmbeddedTarget.StartAsync(new EmbeddedClusterSettings { Fsync = false, Sessions = settings.Sessions }, default);
        await using var rpc = await HyderGrpcServer.StartAsync(cluster.Servers[0], new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) });
        await using var remote = new HyderRemoteTarget($"Endpoint={rpc.Address};Timeout=20");
        var target = new CountingTarget(remote);
        var result = await LoadAndRunAsync(target, workload, settings);

        var m = result.Totals;
        var server = result.Target.ToDictionary(r => r.Metric, r => r.Value);
        // Over gRPC, Add is always the commutative operation: a turned-down order reaches the log and meld aborts it.
        Assert.Equal(Transactions, m.Committed + m.GaveUp + m.BoundRejected);
        Assert.Equal(m.Committed + m.Aborted + m.BoundRejected, server["Intentions"] + cluster.Servers[0].Metrics.ReadOnlyCommits);
        Assert.Equal(m.Aborted + m.BoundRejected, server["MeldAborted"]);
        Assert.Equal(name == "stock", m.BoundRejected > 0);
        Assert.Equal(0, m.InconsistentReads);
        await AssertCountersHoldTheCommittedIncrementsAsync(target, workload);
    }

    [Theory]
    [InlineData(0)]
    [InlineData(1_000_000)]
    public async Task ACounterReadOutsideWhatTheIncrementsCanProduceIsCounted(long error)
    {
        var workload = Create("like");
        await using var memory = new MemoryReferenceTarget();
        var result = await LoadAndRunAsync(new CountingTarget(memory, counterError: error), workload, Settings());
        if (error == 0)
        {
            Assert.Equal(0, result.Totals.InconsistentReads);
        }
        else
        {
            // Every read transaction reads one page's count: all of those reads are off.
            Assert.InRange(result.Totals.InconsistentReads, 1, result.Totals[Metrics.Series.Read].TotalCount / 2);
        }
    }

    private static DriverSettings Settings() => new()
    {
        Threads = 2,
        InFlightPerThread = 4,
        OperationCount = Transactions,
        ValueSize = 16,
        MaxRetries = 50,
        StatusInterval = TimeSpan.FromMilliseconds(200),
    };

    private static Workload Create(string name) => name switch
    {
        "tx" => new TransactionalWorkload(500, 8, 2, 0.2, Distribution.Uniform, new DistributionSettings(), IsolationLevel.Serializable),
        "incr1" => new Incr1Workload(50, 0.5, IsolationLevel.Serializable),
        "like" => new LikeWorkload(200, 200, 1.4, 0.5, IsolationLevel.Serializable),
        "stock" => new StockWorkload(20, 0.99, 20, 0.8, 0.3, IsolationLevel.Serializable),
        _ => new CoreWorkload(name, CoreMix.Preset(name[0]), 500, 20, new DistributionSettings(), IsolationLevel.Serializable),
    };

    private static async Task<PhaseResult> LoadAndRunAsync(ITarget target, Workload workload, DriverSettings settings)
    {
        var counters = new CounterBounds(startsAtZero: true);
        await target.PrepareAsync(workload.KeySpaces, reset: true, default);
        var source = new LoadSource(workload.KeySpaces, 50);
        var load = new PhaseRunner(target, workload.KeySpaces, settings with { OperationCount = null }, new MemoryTargetTests.CollectingSink(), counters);
        var loaded = await load.RunAsync("load", Enumerable.Repeat<ITransactionSource>(source, settings.Threads).ToArray(), default);
        Assert.Equal(source.TotalRecords, loaded.CommittedOperations);
        var run = new PhaseRunner(target, workload.KeySpaces, settings, new MemoryTargetTests.CollectingSink(), counters);
        return await run.RunAsync("run", Enumerable.Range(0, settings.Threads).Select(w => workload.CreateSource(11, w)).ToArray(), default);
    }

    /// <summary>Every counter key space sums to exactly the increments of committed transactions.</summary>
    private static async Task AssertCountersHoldTheCommittedIncrementsAsync(CountingTarget target, Workload workload)
    {
        var keys = new KeyCodec(4, hashed: true);
        var key = new byte[4];
        await using var session = await target.OpenSessionAsync(default);
        await session.BeginAsync(IsolationLevel.Serializable, readOnly: true, default);
        long total = 0;
        var spaces = 0;
        foreach (var space in workload.KeySpaces.Where(s => s.Kind == ValueKind.Counter))
        {
            spaces++;
            for (var i = 0L; i < space.InitialRecords; i++)
            {
                keys.Encode(i, key);
                total += await session.ReadCounterAsync(space, key, default) ?? throw new InvalidOperationException($"counter {i} of {space.Name} is missing");
            }
        }

        await session.RollbackAsync(default);
        if (spaces > 0)
        {
            Assert.True(target.CommittedIncrements > 0);
        }

        Assert.Equal(target.CommittedIncrements, total);
    }

    /// <summary>
    /// A target in front of another that counts the increments of committed transactions and can
    /// falsify counter reads (to prove the driver's check notices).
    /// </summary>
    private sealed class CountingTarget(ITarget inner, long counterError = 0) : ITarget
    {
        private long _committed;

        public long CounterError => counterError;

        public long CommittedIncrements => Interlocked.Read(ref _committed);

        public string Description => inner.Description;

        public Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken) => inner.PrepareAsync(keySpaces, reset, cancellationToken);

        public async Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken) =>
            new Session(this, await inner.OpenSessionAsync(cancellationToken));

        public ValueTask<object?> SampleAsync(CancellationToken cancellationToken) => inner.SampleAsync(cancellationToken);

        public ValueTask<IReadOnlyList<(string Metric, double Value)>> SummarizeAsync(object? start, long committedTransactions, CancellationToken cancellationToken) =>
            inner.SummarizeAsync(start, committedTransactions, cancellationToken);

        public ValueTask DisposeAsync() => ValueTask.CompletedTask;

        private sealed class Session(CountingTarget target, ITargetSession inner) : ITargetSession
        {
            private long _pending;

            public ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken)
            {
                _pending = 0;
                return inner.BeginAsync(isolation, readOnly, cancellationToken);
            }

            public ValueTask<bool> GetAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) => inner.GetAsync(space, key, cancellationToken);

            public async ValueTask<long?> ReadCounterAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) =>
                await inner.ReadCounterAsync(space, key, cancellationToken) + target.CounterError;

            public ValueTask PutAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken) =>
                inner.PutAsync(space, key, value, cancellationToken);

            public ValueTask<bool> InsertAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken) =>
                inner.InsertAsync(space, key, value, cancellationToken);

            public ValueTask<bool> DeleteAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) => inner.DeleteAsync(space, key, cancellationToken);

            public ValueTask<int> ScanAsync(KeySpace space, ReadOnlyMemory<byte> startKey, int limit, CancellationToken cancellationToken) =>
                inner.ScanAsync(space, startKey, limit, cancellationToken);

            public ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, CancellationToken cancellationToken)
            {
                _pending += delta;
                return inner.AddAsync(space, key, delta, cancellationToken);
            }

            public ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, long? min, long? max, CancellationToken cancellationToken)
            {
                _pending += delta;
                return inner.AddAsync(space, key, delta, min, max, cancellationToken);
            }

            public async ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken)
            {
                var outcome = await inner.CommitAsync(cancellationToken);
                if (outcome.Committed)
                {
                    Interlocked.Add(ref target._committed, _pending);
                }

                _pending = 0;
                return outcome;
            }

            public ValueTask RollbackAsync(CancellationToken cancellationToken)
            {
                _pending = 0;
                return inner.RollbackAsync(cancellationToken);
            }

            public ValueTask DisposeAsync() => inner.DisposeAsync();
        }
    }
}
