using System.Collections.Concurrent;
using Hyder.Doppel;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// Doppel's split phases in a cluster of transaction servers (docs/doppel.md, "Split phases"):
/// a hot counter's Adds are staged in the side table and reconciled at phase ends, readers of it
/// are stashed until the reconciled state, servers agree byte for byte, and a checkpoint taken in
/// the middle of a phase restarts a server that reaches its peers' hash.
/// </summary>
public sealed class SplitPhaseServerTests
{
    private static readonly byte[] Counter = Key(7);

    private static long Read(OperationResult r) => r.Found ? BitConverter.ToInt64(r.Value) : 0;

    [Fact]
    public async Task AHotCounterUnderSplitPhasesSumsExactlyAndReadersOnlySeeReconciledValues()
    {
        var settings = new ClusterSettings { SplitPhaseLength = 16, HotThreshold = 4, MaxSplitKeys = 4 };
        await using var cluster = await StartAsync(2, settings);
        long committed = 0;
        var reads = new ConcurrentQueue<(int Server, long Value, long Snapshot)>();
        using var stop = new CancellationTokenSource();

        // Readers: one-shot reads of the counter and a cold key, on both servers, all the while.
        var readers = Enumerable.Range(0, 2).Select(r => Task.Run(async () =>
        {
            var server = cluster.Servers[r];
            while (!stop.IsCancellationRequested)
            {
                var o = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Counter), Operation.Get(Key(1000 + r))]);
                Assert.Equal(TransactionStatus.Committed, o.Status);
                reads.Enqueue((r, Read(o.Results[0]), o.SnapshotSequence));
            }
        })).ToArray();

        var writers = Enumerable.Range(0, 6).Select(c => Task.Run(async () =>
        {
            var server = cluster.Servers[c % 2];
            for (var i = 0; i < 60; i++)
            {
                var o = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Counter, 1), Operation.Put(Key(2000 + c), Value($"{i}"))]);
                Assert.Equal(TransactionStatus.Committed, o.Status);
                Interlocked.Increment(ref committed);
            }
        })).ToArray();

        await Task.WhenAll(writers);
        await stop.CancelAsync();
        await Task.WhenAll(readers);

        // Adds never conflict with each other, split or not: every one committed.
        Assert.Equal(360, committed);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        foreach (var server in cluster.Servers)
        {
            var table = (SplitPhaseTable)server.Database.SplitPhases!;
            Assert.True(table.StagedOperations > 0, "no Add was staged in the side table");
            Assert.True(table.Phases > 0 && table.ReconciledKeys > 0, "no phase ended with a reconciliation");
            var final = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Counter)]);
            Assert.Equal(360, Read(final.Results[0]));
        }

        // Every read ran on a reconciled (or pre-split) state of its server, and a server's states
        // only grow the counter.
        Assert.NotEmpty(reads);
        Assert.True(cluster.Servers.Sum(s => s.Metrics.Stashed) > 0, "no reader met the split counter inside a phase");
        foreach (var group in reads.GroupBy(r => r.Server))
        {
            var ordered = group.OrderBy(r => r.Snapshot).ToList();
            for (var i = 1; i < ordered.Count; i++)
            {
                Assert.True(ordered[i].Value >= ordered[i - 1].Value, $"server {group.Key}: {ordered[i - 1]} then {ordered[i]}");
            }

            Assert.All(ordered, r => Assert.InRange(r.Value, 0, 360));
        }
    }

    [Fact]
    public async Task AnInteractiveTransactionThatFirstReadsASplitKeyMovesToTheReconciledState()
    {
        var settings = new ClusterSettings { SplitPhaseLength = 1000, HotKeys = Convert.ToHexString(Counter) };
        await using var cluster = await StartAsync(1, settings);
        var server = cluster.Servers[0];
        for (var i = 0; i < 5; i++)
        {
            Assert.Equal(TransactionStatus.Committed, (await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Counter, 10)])).Status);
        }

        // The labelled key is split from the first ordinal on: the state now lies inside a phase.
        Assert.NotNull(server.Database.Current.SplitKeys);
        await using var tx = server.Begin(IsolationLevel.Serializable);
        var before = tx.SnapshotSequence;
        var read = await tx.ExecuteAsync(Operation.Get(Counter));
        Assert.Equal(50, Read(read));
        Assert.True(tx.SnapshotSequence > before, "the transaction did not move to a reconciled state");
        tx.Execute(Operation.Put(Key(1), Value("after the read")));
        Assert.Equal(TransactionStatus.Committed, (await tx.CommitAsync()).Status);
        Assert.Equal(1, server.Metrics.Stashed);
    }

    [Fact]
    public async Task ACheckpointInTheMiddleOfASplitPhaseRestartsAServerThatReachesItsPeersHash()
    {
        var settings = new ClusterSettings { SplitPhaseLength = 10_000, HotThreshold = 8, HotKeys = Convert.ToHexString(Counter), PremeldThreads = 1, Distance = 1 };
        await using var cluster = await StartAsync(2, settings);
        await AddsAsync(cluster, clients: 4, each: 40);

        // Mid-phase: the table holds the counter's Adds, the tree does not.
        var table = (SplitPhaseTable)cluster.Servers[0].Database.SplitPhases!;
        Assert.True(table.StagedOperations > 0);
        var barrier = await cluster.Servers[0].CheckpointAsync();
        Assert.True(barrier > 0);
        await AddsAsync(cluster, clients: 4, each: 40);

        var second = cluster.Servers[1];
        await second.DisposeAsync();
        cluster.Servers.RemoveAt(1);
        var restarted = await cluster.AddServerAsync();
        Assert.True(restarted.Metrics.Commits < cluster.Servers[0].Metrics.Commits, "the restarted server did not start from the checkpoint");
        var restartedTable = (SplitPhaseTable)restarted.Database.SplitPhases!;
        Assert.True(restartedTable.PhaseStart > 1, "the restarted server's phase did not start after the barrier");
        await AddsAsync(cluster, clients: 2, each: 30);

        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        foreach (var server in cluster.Servers)
        {
            var value = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Counter)]);
            Assert.Equal(380, Read(value.Results[0]));
        }
    }

    [Fact]
    public async Task AStashedReadEndsWhenTheServerStops()
    {
        // A long phase and no filler for a while: the read of the split counter waits for the stop.
        var settings = new ClusterSettings { SplitPhaseLength = 100_000, HotKeys = Convert.ToHexString(Counter) };
        var cluster = await StartAsync(1, settings, o => o.FillerAfter = TimeSpan.FromMinutes(5));
        var server = cluster.Servers[0];
        Assert.Equal(TransactionStatus.Committed, (await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Counter, 1)])).Status);
        var read = server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Counter)]).AsTask();
        await Cluster.WaitUntil(() => server.Metrics.Stashed == 1, "the read was stashed");
        Assert.False(read.IsCompleted);
        await cluster.DisposeAsync();
        var refused = await Assert.ThrowsAsync<EngineException>(() => read.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.Equal(EngineErrorCode.Unavailable, refused.Code);
    }

    [Fact]
    public async Task WithTheModuleOffAddsRunAsReadModifyWritesAndConflict()
    {
        await using var cluster = await StartAsync(1, new ClusterSettings { CommutativeOperations = false });
        var server = cluster.Servers[0];
        var open = new List<IInteractiveTransaction>();
        for (var i = 0; i < 8; i++)
        {
            var tx = server.Begin(IsolationLevel.Serializable);
            tx.Execute(Operation.Add(Counter, 1));
            open.Add(tx);
        }

        var outcomes = new List<TransactionOutcome>();
        foreach (var tx in open)
        {
            outcomes.Add(await tx.CommitAsync());
            await tx.DisposeAsync();
        }

        Assert.Equal(1, outcomes.Count(o => o.Status == TransactionStatus.Committed));
        Assert.All(outcomes.Where(o => o.Status != TransactionStatus.Committed), o => Assert.Contains(o.Cause, new[] { AbortCause.WriteWrite, AbortCause.ReadWrite, AbortCause.Phantom }));
        Assert.Null(server.Database.SplitPhases);
    }

    [Fact]
    public void TheClusterSettingsCarryTheModuleAndRejectBadValues()
    {
        var settings = new ClusterSettings { SplitPhaseLength = 64, HotThreshold = 3, MaxSplitKeys = 2, HotKeys = "0A0B,FF" };
        Assert.Equal(settings, ClusterSettings.Decode(settings.Encode()));
        Assert.Equal(new ClusterSettings { CommutativeOperations = false }, ClusterSettings.Decode(new ClusterSettings { CommutativeOperations = false }.Encode()));
        Assert.Throws<ArgumentException>(() => new ClusterSettings { SplitPhaseLength = 8, CommutativeOperations = false }.Validate());
        Assert.Throws<ArgumentException>(() => new ClusterSettings { HotKeys = "0A,zz" }.Validate());
        Assert.Throws<ArgumentOutOfRangeException>(() => new ClusterSettings { SplitPhaseLength = -1 }.Validate());
        Assert.Throws<ArgumentException>(() => new ClusterSettings { SplitPhaseLength = 8, HotKeys = "0A,0a" }.Validate());
    }

    private static async Task AddsAsync(TestCluster cluster, int clients, int each)
    {
        var servers = cluster.Servers.ToArray();
        await Task.WhenAll(Enumerable.Range(0, clients).Select(c => Task.Run(async () =>
        {
            for (var i = 0; i < each; i++)
            {
                TransactionOutcome o;
                do
                {
                    o = await servers[c % servers.Length].ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Counter, 1), Operation.Put(Key(3000 + c), Value($"{i}"))]);
                }

                // A checkpoint barrier that lands between a transaction's snapshot and its
                // intention aborts it on every server (docs/server.md); a client runs it again.
                while (o.Status == TransactionStatus.Aborted && o.Cause == AbortCause.SnapshotBeforeCheckpoint);
                Assert.True(o.Status == TransactionStatus.Committed, $"Add + Put by client {c}, round {i}: {o.Status} {o.Cause} {o.Detail} (ordinal {o.Ordinal}, snapshot {o.SnapshotSequence})");
            }
        })));
    }
}
