using Hyder.Testing;
using Hyder.Log;
using Hyder.Log.Embedded;
using Hyder.Log.Storage;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Pipeline;
using Hyder.Tree.Serialization;
using Xunit;
using static Hyder.Server.Tests.Server.ServerClusterTests;

namespace Hyder.Server.Tests.Server;

/// <summary>Self-contained checkpoints and the trim of the log below them (docs/server.md, "Trimming the log").</summary>
public sealed class TrimTests
{
    private static readonly ClusterSettings Settings = new() { PremeldThreads = 2, Distance = 2, GroupMeld = true, BlockSize = 512 };

    private static async Task<bool> EventuallyAsync(Func<bool> condition, int seconds = 30)
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromSeconds(seconds));
        while (!condition())
        {
            if (cts.IsCancellationRequested)
            {
                return false;
            }

            await Task.Delay(5);
        }

        return true;
    }

    /// <summary>
    /// The log is trimmed below a checkpoint (its settings record and every intention the state's
    /// persistent nodes came from included); a restarted server and a new one start from the
    /// checkpoint alone and reach their peer's state hash, under load.
    /// </summary>
    [Fact]
    public async Task RestartAndJoinAfterATrimReachThePeersHash()
    {
        var data = Directory.CreateTempSubdirectory("hyder-trim-");
        try
        {
            var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions { DataDirectory = data.FullName, SlotsPerSegment = 64, Fsync = FsyncPolicy.None });
            await using var cluster = await TestCluster.StartAsync(2, Settings, log: log);
            await Workload(cluster, clients: 4, transactions: 60);

            var load = Workload(cluster, clients: 3, transactions: 60, servers: [0]);
            var barrier = await cluster.Servers[0].CheckpointAsync();
            await load;
            await cluster.QuiesceAsync();
            var segments = Directory.GetFiles(data.FullName, "segment-*.log", SearchOption.AllDirectories).Length;
            var mark = await cluster.Servers[0].TrimAsync(keepCheckpoints: 1);
            Assert.True(mark > 64 * 2, $"trim mark {mark}");
            Assert.Equal(mark, cluster.Servers[1].TrimMark(1));
            var buffer = new byte[log.BlockSize];
            Assert.Equal(LogStatus.Trimmed, (await Assert.ThrowsAsync<SharedLogException>(async () => await log.ReadAsync(0, buffer))).Status);
            Assert.Equal(LogStatus.Trimmed, (await Assert.ThrowsAsync<SharedLogException>(async () => await log.ReadAsync(mark - 1, buffer))).Status);

            // The unit deleted the segment files wholly below the mark.
            var left = Directory.GetFiles(data.FullName, "segment-*.log", SearchOption.AllDirectories).Length;
            Assert.True(left <= segments - (mark / 64) + 1, $"{left} segment files left of {segments} after trimming below @{mark}");

            // Restart the second server and add a third while the first keeps loading.
            await cluster.Servers[1].DisposeAsync();
            cluster.Servers.RemoveAt(1);
            var more = Workload(cluster, clients: 2, transactions: 60, servers: [0]);
            var restarted = await cluster.AddServerAsync();
            var joined = await cluster.AddServerAsync();
            await more;
            var hashes = await cluster.QuiesceAsync();
            Assert.Equal(hashes[0], hashes[1]);
            Assert.Equal(hashes[0], hashes[2]);
            Assert.True(restarted.LastMelded > barrier);

            // They keep melding in step.
            await Workload(cluster, clients: 3, transactions: 30);
            hashes = await cluster.QuiesceAsync();
            Assert.Equal(hashes[0], hashes[1]);
            Assert.Equal(hashes[0], hashes[2]);
            Assert.Null(joined.Failure);
        }
        finally
        {
            data.Delete(recursive: true);
        }
    }

    /// <summary>A server that would replay the log from its start on a trimmed log is refused with a reason that names the checkpoint, not left hanging.</summary>
    [Fact]
    public async Task AServerThatCannotStartFromACheckpointIsToldSo()
    {
        await using var cluster = await TestCluster.StartAsync(1, Settings);
        await Workload(cluster, clients: 2, transactions: 30);
        await cluster.Servers[0].CheckpointAsync();
        await cluster.QuiesceAsync();
        Assert.True(await cluster.Servers[0].TrimAsync() > 0);

        var options = TestCluster.Options("replayer", Settings);
        options.RecoverFromCheckpoint = false;
        var e = await Assert.ThrowsAsync<ServerStartException>(() => TransactionServer.StartAsync(cluster.Log, options));
        Assert.Contains("checkpoint", e.Message);

        // Other settings are refused against the checkpoint's copy of the settings record.
        var other = TestCluster.Options("other", new ClusterSettings { PremeldThreads = 1, Distance = 1, GroupMeld = false, BlockSize = 512 });
        e = await Assert.ThrowsAsync<ServerStartException>(() => TransactionServer.StartAsync(cluster.Log, other));
        Assert.Contains("differ from the log's", e.Message);
    }

    /// <summary>
    /// A slow server is still reading below the position a trim removes: once it goes on, it stops
    /// with <see cref="TrimmedLogException"/> (its calls answer Unavailable), and started again it
    /// loads the checkpoint and reaches its peer's hash.
    /// </summary>
    [Fact]
    public async Task ATrimRacingASlowReaderStopsItClearlyAndItRestartsFromTheCheckpoint()
    {
        await using var cluster = await TestCluster.StartAsync(1, Settings);
        await Workload(cluster, clients: 2, transactions: 20);
        using var gate = new ManualResetEventSlim(false);
        var hold = long.MaxValue;
        var slow = await cluster.AddServerAsync(o =>
        {
            o.PipelineWindow = 8;
            o.StageDelay = (stage, ordinal) =>
            {
                if (stage == PipelineStage.FinalMeld && ordinal > Volatile.Read(ref hold))
                {
                    gate.Wait(TimeSpan.FromSeconds(60));
                }
            };
        });
        Volatile.Write(ref hold, slow.LastMelded + 5);

        await Workload(cluster, clients: 3, transactions: 60, servers: [0]);
        await cluster.Servers[0].CheckpointAsync();
        await Workload(cluster, clients: 2, transactions: 20, servers: [0]);
        var mark = await cluster.Servers[0].TrimAsync();
        Assert.True(slow.ReadPosition < mark, $"the slow server read to @{slow.ReadPosition}, the trim is @{mark}");
        gate.Set();

        Assert.True(await EventuallyAsync(() => slow.Failure is not null), "the slow server neither failed nor went on");
        var failure = Assert.IsType<TrimmedLogException>(slow.Failure);
        Assert.Contains("restart it", failure.Message);
        var refused = await Assert.ThrowsAsync<EngineException>(async () => await slow.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(TestCluster.Key(1), [1])]));
        Assert.Equal(EngineErrorCode.Unavailable, refused.Code);

        await slow.DisposeAsync();
        cluster.Servers.Remove(slow);
        await cluster.AddServerAsync();
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
    }

    /// <summary>
    /// A server whose checkpoint write hangs melds on; it then stops (disposed, the write abandoned) after writing part of a
    /// checkpoint: the parts without a final block are no checkpoint — the trim rule does not count
    /// them, and a server started later loads the previous complete checkpoint and reaches the hash
    /// of a server that replays the whole log.
    /// </summary>
    [Fact]
    public async Task AServerStoppedDuringACheckpointWriteLeavesNoCheckpointAndNothingTrimmed()
    {
        var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await using var cluster = await TestCluster.StartAsync(1, Settings, log: log);
        await Workload(cluster, clients: 3, transactions: 40);
        await cluster.Servers[0].CheckpointAsync();
        await Workload(cluster, clients: 3, transactions: 40);
        var before = cluster.Servers[0].TrimMark(1);
        Assert.NotNull(before);

        // The writer's appends hang after its first checkpoint part.
        var parts = 0;
        var writer = new GatedLog(log, block => BlockHeader.TryParse(block.Span, out var h, out _) && h.Kind == BlockKind.CheckpointPart && Interlocked.Increment(ref parts) > 1);
        var crashing = await TransactionServer.StartAsync(writer, TestCluster.Options("crashing", Settings));
        await Workload(cluster, clients: 2, transactions: 20);
        var checkpoint = crashing.CheckpointAsync().AsTask();
        Assert.True(await EventuallyAsync(() => Volatile.Read(ref parts) > 1), "the checkpoint write did not start");

        // While its checkpoint write hangs, the server melds on: its own transactions commit.
        for (var i = 0; i < 20; i++)
        {
            var outcome = await crashing.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(TestCluster.Key(10_000 + i), [(byte)i])]);
            Assert.Equal(TransactionStatus.Committed, outcome.Status);
        }

        Assert.False(checkpoint.IsCompleted);
        await crashing.DisposeAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => checkpoint);

        await Workload(cluster, clients: 2, transactions: 20);
        await cluster.QuiesceAsync();
        Assert.Equal(before, cluster.Servers[0].TrimMark(1));
        await cluster.Servers[0].TrimAsync();

        await cluster.AddServerAsync();
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
    }

    /// <summary>
    /// Two servers' checkpoints finish out of order: the trim keeps the one that finished first, and
    /// the other one, of an earlier barrier, finishes after the trim with its parts above the mark
    /// but its resume position below it. A server started then skips that latest final block and
    /// starts from the older checkpoint, reaching its peers' hash (it failed to start before: it
    /// loaded the latest and could not read its resume position).
    /// </summary>
    [Fact]
    public async Task ACheckpointOfAnEarlierBarrierFinishingAfterTheTrimIsSkippedAtRestart()
    {
        var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await using var cluster = await TestCluster.StartAsync(1, Settings, log: log);
        await Workload(cluster, clients: 3, transactions: 40);

        // The late server's checkpoint parts wait at a gate: its barrier comes first, its parts last.
        var gate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var waiting = 0;
        var gated = new GatedLog(log, block => BlockHeader.TryParse(block.Span, out var h, out _) && h.Kind == BlockKind.CheckpointPart && Interlocked.Increment(ref waiting) > 0, gate.Task);
        await using var late = await TransactionServer.StartAsync(gated, TestCluster.Options("late", Settings));
        var lateCheckpoint = late.CheckpointAsync().AsTask();
        Assert.True(await EventuallyAsync(() => Volatile.Read(ref waiting) > 0), "the late server's checkpoint write did not start");

        await Workload(cluster, clients: 3, transactions: 40, servers: [0]);
        await cluster.Servers[0].CheckpointAsync();
        await Workload(cluster, clients: 2, transactions: 20, servers: [0]);
        await cluster.QuiesceAsync();
        var mark = await cluster.Servers[0].TrimAsync(keepCheckpoints: 1);
        Assert.True(mark > 0, "nothing trimmed");

        gate.SetResult();
        await lateCheckpoint;
        await Workload(cluster, clients: 2, transactions: 20, servers: [0]);
        await cluster.QuiesceAsync();
        Assert.True(await EventuallyAsync(() => cluster.Servers[0].TrimMark(1) < mark), "the late checkpoint does not need a trimmed position: the test did not set up the race");

        var joined = await cluster.AddServerAsync();
        Assert.NotNull(joined.StartedFromCheckpoint);
        await Workload(cluster, clients: 2, transactions: 20);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.Null(joined.Failure);
    }

    /// <summary>The trim policy: every server trims below the checkpoint K back as it reads checkpoints; the log stays bounded and a new server joins.</summary>
    [Fact]
    public async Task ThePolicyTrimsBelowTheCheckpointKBack()
    {
        await using var cluster = await TestCluster.StartAsync(2, Settings, o =>
        {
            o.CheckpointEvery = 60;
            o.TrimKeepCheckpoints = 2;
        });
        for (var round = 0; round < 4; round++)
        {
            await Workload(cluster, clients: 3, transactions: 30);
        }

        Assert.True(await EventuallyAsync(() => cluster.Servers.All(s => s.TrimmedBelow > 0) && cluster.Servers[0].TrimMark(2) == cluster.Servers[0].TrimmedBelow), "no server trimmed by policy");
        var mark = cluster.Servers[0].TrimmedBelow;
        Assert.True(cluster.Servers[0].TrimMark(1) >= mark, "the latest checkpoint is above the trim: two are kept");
        var buffer = new byte[cluster.Log.BlockSize];
        await Assert.ThrowsAsync<SharedLogException>(async () => await cluster.Log.ReadAsync(mark - 1, buffer));

        await cluster.AddServerAsync();
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.Equal(hashes[0], hashes[2]);
    }

    /// <summary>A log whose appends of chosen blocks wait for <paramref name="release"/> (never, if null) or until cancelled: a writer that stops mid-write, or a slow one.</summary>
    private sealed class GatedLog(ISharedLog inner, Func<ReadOnlyMemory<byte>, bool> hang, Task? release = null) : DelegatingLog(inner)
    {
        public override async ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
        {
            if (hang(block))
            {
                await (release ?? Task.Delay(Timeout.Infinite, cancellationToken)).WaitAsync(cancellationToken);
            }

            return await Inner.AppendAsync(block, cancellationToken);
        }

    }
}
