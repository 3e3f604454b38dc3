using Hyder.Server.Grpc;
using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Targets.Hyder;
using Hyder.Ycsb.Workloads;
using Xunit;

namespace Hyder.Ycsb.Tests;

/// <summary>
/// <c>--one-shot</c>: a transaction of reads and updates goes to the target as one request; without
/// it, <c>--connect</c> pipelines such a transaction unless <c>--no-pipeline</c>; any other
/// transaction stays interactive; the counts agree with the servers' own, embedded and over gRPC.
/// </summary>
public class OneShotTests
{
    private const int Transactions = 300;

    [Theory]
    [InlineData("tx", true, Transactions)]
    [InlineData("a", true, Transactions)]
    [InlineData("tx", false, 0)]
    [InlineData("e", true, 0)]
    public async Task OnlyTransactionsOfReadsAndUpdatesGoAsOneRequestAndOnlyWithTheOption(string name, bool oneShot, int expectedOneShots)
    {
        var workload = Create(name);
        await using var memory = new MemoryReferenceTarget();
        var target = new OneShotEmulatingTarget(memory);
        var result = await LoadAndRunAsync(target, workload, Settings() with { OneShot = oneShot }, target.ResetCounts);

        var m = result.Totals;
        Assert.Equal(Transactions, m.Committed + m.GaveUp);
        Assert.Equal(0, m.NotFound);
        if (expectedOneShots > 0)
        {
            // Every attempt is one request, timed as a commit; no operation is timed on its own.
            Assert.Equal(m.Committed + m.Aborted, target.OneShots);
            Assert.Equal(0, target.Begins);
            Assert.Equal(target.OneShots, m[Series.Commit].TotalCount);
            Assert.Equal(0, m[Series.Read].TotalCount);
        }
        else
        {
            Assert.Equal(0, target.OneShots);
            Assert.True(target.Begins >= Transactions);
            Assert.True(m[Series.Read].TotalCount + m[Series.Scan].TotalCount > 0);
        }
    }

    [Fact]
    public async Task AOneShotReadOfAMissingRecordIsCountedAsNotFound()
    {
        // 500 records in the workload, 50 loaded: most reads miss.
        var workload = new TransactionalWorkload(500, 8, 2, 0, Distribution.Uniform, new DistributionSettings(), IsolationLevel.Serializable);
        await using var memory = new MemoryReferenceTarget();
        var target = new OneShotEmulatingTarget(memory);
        await target.PrepareAsync(workload.KeySpaces, reset: true, default);
        var settings = Settings() with { OneShot = true };
        var run = new PhaseRunner(target, workload.KeySpaces, settings, new MemoryTargetTests.CollectingSink(), new CounterBounds(startsAtZero: true));
        var result = await run.RunAsync("run", Enumerable.Range(0, settings.Threads).Select(w => workload.CreateSource(11, w)).ToArray(), default);
        Assert.Equal(target.NotFound, result.Totals.NotFound);
        Assert.True(result.Totals.NotFound > 0);
    }

    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(true, true)]
    public async Task OneShotTransactionsCommitOnAHyderClusterEmbeddedAndOverGrpc(bool overGrpc, bool multiplex)
    {
        var workload = Create("tx");
        var settings = Settings() with { OneShot = true };
        await using var cluster = await HyderEmbeddedTarget.StartAsync(new EmbeddedClusterSettings { Fsync = false, Sessions = settings.Sessions }, default);
        await using var rpc = overGrpc ? await HyderGrpcServer.StartAsync(cluster.Servers[0], new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) }) : null;
        await using var remote = rpc is null ? null : new HyderRemoteTarget($"Endpoint={rpc.Address};Timeout=20", multiplex);
        Assert.Equal(multiplex, remote?.Description.Contains("multiplexed", StringComparison.Ordinal) ?? false);
        ITarget target = remote is null ? cluster : remote;
        var result = await LoadAndRunAsync(target, workload, settings);

        var m = result.Totals;
        var server = result.Target.ToDictionary(r => r.Metric, r => r.Value);
        Assert.Equal(Transactions, m.Committed + m.GaveUp);
        Assert.Equal(m.Committed + m.Aborted, server["Intentions"] + cluster.Servers[0].Metrics.ReadOnlyCommits);
        Assert.Equal(m.Aborted, server["MeldAborted"]);
        Assert.Equal(m.Committed + m.Aborted, m[Series.Commit].TotalCount);
        Assert.Equal(0, m[Series.Read].TotalCount);
        Assert.Equal(0, m.NotFound);
    }

    [Theory]
    [InlineData("tx", true, false)]
    [InlineData("tx", false, false)]
    [InlineData("tx", true, true)]
    [InlineData("f", true, false)]
    [InlineData("e", true, false)]
    public async Task OnlyTransactionsOfIndependentReadsAndUpdatesArePipelinedAndOnlyWithoutNoPipeline(string name, bool pipeline, bool oneShot)
    {
        var workload = Create(name);
        await using var memory = new MemoryReferenceTarget();
        var target = new OneShotEmulatingTarget(memory, pipelines: true);
        var result = await LoadAndRunAsync(target, workload, Settings() with { OneShot = oneShot, Pipeline = pipeline }, target.ResetCounts);

        var m = result.Totals;
        Assert.Equal(Transactions, m.Committed + m.GaveUp);
        Assert.Equal(0, m.NotFound);
        switch (name)
        {
            case "tx" when oneShot:
                // One-shot wins over pipelining: one request beats three round trips.
                Assert.Equal(0, target.Pipelined);
                Assert.Equal(m.Committed + m.Aborted, target.OneShots);
                break;
            case "tx" when pipeline:
                Assert.Equal(m.Committed + m.Aborted, target.Pipelined);
                Assert.Equal(0, target.Begins);
                Assert.Equal(target.Pipelined, m[Series.Commit].TotalCount);
                Assert.Equal(0, m[Series.Read].TotalCount);
                break;
            case "tx":
                Assert.Equal(0, target.Pipelined + target.OneShots);
                Assert.True(target.Begins >= Transactions);
                Assert.True(m[Series.Read].TotalCount > 0);
                break;
            case "f":
                // Reads alone are pipelined; a read-modify-write (the write follows its read) is not.
                Assert.True(target.Pipelined > 0);
                Assert.True(m[Series.ReadModifyWrite].TotalCount > 0);
                Assert.True(target.Begins >= m[Series.ReadModifyWrite].TotalCount);
                break;
            default:
                // Scans and inserts (a get, then a put only if absent) stay interactive.
                Assert.Equal(0, target.Pipelined);
                Assert.True(target.Begins >= Transactions);
                break;
        }
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task ConnectTransactionsCommitOverGrpcPipelinedAndOneAtATime(bool pipeline)
    {
        var workload = Create("tx");
        var settings = Settings() with { Pipeline = pipeline };
        await using var cluster = await HyderEmbeddedTarget.StartAsync(new EmbeddedClusterSettings { Fsync = false, Sessions = settings.Sessions }, default);
        await using var rpc = await HyderGrpcServer.StartAsync(cluster.Servers[0], new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) });
        await using var remote = new HyderRemoteTarget($"Endpoint={rpc.Address};Timeout=20");
        var result = await LoadAndRunAsync(remote, workload, settings);

        var m = result.Totals;
        var server = result.Target.ToDictionary(r => r.Metric, r => r.Value);
        Assert.Equal(Transactions, m.Committed + m.GaveUp);
        Assert.True(m.Committed > 0);
        Assert.Equal(m.Committed + m.Aborted, server["Intentions"] + cluster.Servers[0].Metrics.ReadOnlyCommits);
        Assert.Equal(m.Aborted, server["MeldAborted"]);
        Assert.Equal(m.Committed + m.Aborted, m[Series.Commit].TotalCount);
        Assert.Equal(0, m.NotFound);
        if (pipeline)
        {
            Assert.Equal(0, m[Series.Read].TotalCount);
        }
        else
        {
            Assert.Equal(8 * (m.Committed + m.Aborted), m[Series.Read].TotalCount);
        }
    }

    [Fact]
    public async Task APipelinedReadOfAMissingRecordOverGrpcIsCountedAsNotFound()
    {
        // Nothing loaded and nothing written: every read misses.
        var workload = new TransactionalWorkload(500, 8, 0, 0, Distribution.Uniform, new DistributionSettings(), IsolationLevel.Serializable);
        var settings = Settings() with { OperationCount = 40 };
        await using var cluster = await HyderEmbeddedTarget.StartAsync(new EmbeddedClusterSettings { Fsync = false, Sessions = settings.Sessions }, default);
        await using var rpc = await HyderGrpcServer.StartAsync(cluster.Servers[0], new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) });
        await using var remote = new HyderRemoteTarget($"Endpoint={rpc.Address};Timeout=20");
        await remote.PrepareAsync(workload.KeySpaces, reset: true, default);
        var run = new PhaseRunner(remote, workload.KeySpaces, settings, new MemoryTargetTests.CollectingSink(), new CounterBounds(startsAtZero: true));
        var result = await run.RunAsync("run", Enumerable.Range(0, settings.Threads).Select(w => workload.CreateSource(11, w)).ToArray(), default);

        Assert.Equal(40, result.Totals.Committed + result.Totals.GaveUp);
        Assert.Equal(0, result.Totals[Series.Read].TotalCount);
        Assert.Equal(8 * result.Totals.Committed, result.Totals.NotFound);
    }

    [Theory]
    [InlineData(false, false)]
    [InlineData(true, false)]
    [InlineData(false, true)]
    [InlineData(true, true)]
    public async Task AValueIsACopyOfItsOwnUnlessTheSessionOnlyReadsItDuringTheCall(bool readsOnlyDuringTheCall, bool pipelined)
    {
        var session = new RecordingSession(readsOnlyDuringTheCall);
        var value = new byte[] { 1, 2, 3 };
        var space = new KeySpace(0, "usertable", ValueKind.Bytes, 1);
        OneShotOperation[] operations = [new OneShotOperation(space, new byte[] { 7 }, value), new OneShotOperation(space, new byte[] { 8 }, null)];

        await (pipelined
            ? session.RunPipelinedAsync(IsolationLevel.Serializable, operations, default)
            : session.RunOneShotAsync(IsolationLevel.Serializable, operations, default));

        // The engine keeps a put's value in its tree: it must not be the driver's buffer, which the
        // next transaction overwrites. A remote one-shot call has serialized it before it
        // completes, and a remote put copies it into its request when it is called.
        var sent = session.Sent!;
        Assert.Equal(value, sent[0].Value);
        Assert.Equal(readsOnlyDuringTheCall, ReferenceEquals(value, sent[0].Value));
        Assert.Null(sent[1].Value);
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
        _ => new CoreWorkload(name, CoreMix.Preset(name[0]), 500, 20, new DistributionSettings(), IsolationLevel.Serializable),
    };

    private static async Task<PhaseResult> LoadAndRunAsync(ITarget target, Workload workload, DriverSettings settings, Action? afterLoad = null)
    {
        var counters = new CounterBounds(startsAtZero: true);
        await target.PrepareAsync(workload.KeySpaces, reset: true, default);
        var source = new LoadSource(workload.KeySpaces, 50);
        var load = new PhaseRunner(target, workload.KeySpaces, settings with { OperationCount = null }, new MemoryTargetTests.CollectingSink(), counters);
        await load.RunAsync("load", Enumerable.Repeat<ITransactionSource>(source, settings.Threads).ToArray(), default);
        afterLoad?.Invoke();
        var run = new PhaseRunner(target, workload.KeySpaces, settings, new MemoryTargetTests.CollectingSink(), counters);
        return await run.RunAsync("run", Enumerable.Range(0, settings.Threads).Select(w => workload.CreateSource(11, w)).ToArray(), default);
    }

    /// <summary>
    /// The reference target with one-shot transactions run as begin, the operations and commit on
    /// its own session, counting one-shot requests, begins and reads that found nothing.
    /// </summary>
    private sealed class OneShotEmulatingTarget(ITarget inner, bool pipelines = false) : ITarget
    {
        private long _pipelined;
        private long _oneShots;
        private long _begins;
        private long _notFound;

        public long OneShots => Interlocked.Read(ref _oneShots);

        public long Pipelined => Interlocked.Read(ref _pipelined);

        public long Begins => Interlocked.Read(ref _begins);

        public long NotFound => Interlocked.Read(ref _notFound);

        public string Description => inner.Description;

        public bool Pipelines => pipelines;

        /// <summary>Forgets the load phase's begins (its inserts are interactive).</summary>
        public void ResetCounts()
        {
            Interlocked.Exchange(ref _oneShots, 0);
            Interlocked.Exchange(ref _pipelined, 0);
            Interlocked.Exchange(ref _begins, 0);
            Interlocked.Exchange(ref _notFound, 0);
        }

        public Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken) => inner.PrepareAsync(keySpaces, reset, cancellationToken);

        public async Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken) => new Session(this, await inner.OpenSessionAsync(cancellationToken));

        public ValueTask DisposeAsync() => ValueTask.CompletedTask;

        private sealed class Session(OneShotEmulatingTarget target, ITargetSession inner) : ITargetSession
        {
            public bool CanRunOneShot => true;

            public bool CanPipeline => target.Pipelines;

            public ValueTask<OneShotOutcome> RunPipelinedAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken)
            {
                Interlocked.Increment(ref target._pipelined);
                return RunWholeAsync(isolation, operations, cancellationToken);
            }

            public ValueTask<OneShotOutcome> RunOneShotAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken)
            {
                Interlocked.Increment(ref target._oneShots);
                return RunWholeAsync(isolation, operations, cancellationToken);
            }

            private async ValueTask<OneShotOutcome> RunWholeAsync(IsolationLevel isolation, IReadOnlyList<OneShotOperation> operations, CancellationToken cancellationToken)
            {
                var notFound = 0;
                try
                {
                    await inner.BeginAsync(isolation, operations.All(o => o.Value is null), cancellationToken);
                    foreach (var operation in operations)
                    {
                        if (operation.Value is { } value)
                        {
                            await inner.PutAsync(operation.Space, operation.Key, value, cancellationToken);
                        }
                        else if (!await inner.GetAsync(operation.Space, operation.Key, cancellationToken))
                        {
                            notFound++;
                        }
                    }

                    var outcome = await inner.CommitAsync(cancellationToken);
                    if (outcome.Committed)
                    {
                        Interlocked.Add(ref target._notFound, notFound);
                        return new OneShotOutcome(outcome, notFound);
                    }

                    return new OneShotOutcome(outcome, 0);
                }
                catch (TransactionAbortedException e)
                {
                    await inner.RollbackAsync(cancellationToken);
                    return new OneShotOutcome(CommitOutcome.Aborted(e.Cause), 0);
                }
            }

            public ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken)
            {
                Interlocked.Increment(ref target._begins);
                return inner.BeginAsync(isolation, readOnly, cancellationToken);
            }

            public ValueTask<bool> GetAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) => inner.GetAsync(space, key, cancellationToken);

            public ValueTask<long?> ReadCounterAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) => inner.ReadCounterAsync(space, key, cancellationToken);

            public ValueTask PutAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken) => inner.PutAsync(space, key, value, cancellationToken);

            public ValueTask<bool> InsertAsync(KeySpace space, ReadOnlyMemory<byte> key, ReadOnlyMemory<byte> value, CancellationToken cancellationToken) => inner.InsertAsync(space, key, value, cancellationToken);

            public ValueTask<bool> DeleteAsync(KeySpace space, ReadOnlyMemory<byte> key, CancellationToken cancellationToken) => inner.DeleteAsync(space, key, cancellationToken);

            public ValueTask<int> ScanAsync(KeySpace space, ReadOnlyMemory<byte> startKey, int limit, CancellationToken cancellationToken) => inner.ScanAsync(space, startKey, limit, cancellationToken);

            public ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, CancellationToken cancellationToken) => inner.AddAsync(space, key, delta, cancellationToken);

            public ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken) => inner.CommitAsync(cancellationToken);

            public ValueTask RollbackAsync(CancellationToken cancellationToken) => inner.RollbackAsync(cancellationToken);

            public ValueTask DisposeAsync() => inner.DisposeAsync();
        }
    }

    /// <summary>A Hyder session that records what a one-shot or pipelined transaction hands to <c>ExecuteOneShotAsync</c> or <c>ExecutePipelinedAsync</c>.</summary>
    private sealed class RecordingSession(bool readsOnlyDuringTheCall) : HyderSession
    {
        public (byte[] Key, byte[]? Value)[]? Sent { get; private set; }

        protected override bool ReadsValuesOnlyDuringTheCall => readsOnlyDuringTheCall;

        public override ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken) => throw new NotSupportedException();

        public override ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken) => throw new NotSupportedException();

        public override ValueTask RollbackAsync(CancellationToken cancellationToken) => ValueTask.CompletedTask;

        public override ValueTask DisposeAsync() => ValueTask.CompletedTask;

        protected override ValueTask<OneShotOutcome> ExecuteOneShotAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken)
        {
            Sent = operations;
            return ValueTask.FromResult(new OneShotOutcome(CommitOutcome.Success, 0));
        }

        public override bool CanPipeline => true;

        protected override ValueTask<OneShotOutcome> ExecutePipelinedAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken)
        {
            Sent = operations;
            return ValueTask.FromResult(new OneShotOutcome(CommitOutcome.Success, 0));
        }

        protected override ValueTask<byte[]?> GetValueAsync(byte[] key, CancellationToken cancellationToken) => throw new NotSupportedException();

        protected override ValueTask PutValueAsync(byte[] key, byte[] value, CancellationToken cancellationToken) => throw new NotSupportedException();

        protected override ValueTask<bool> DeleteKeyAsync(byte[] key, CancellationToken cancellationToken) => throw new NotSupportedException();

        protected override ValueTask<int> ScanRangeAsync(byte[] low, byte[] high, int limit, CancellationToken cancellationToken) => throw new NotSupportedException();
    }
}
