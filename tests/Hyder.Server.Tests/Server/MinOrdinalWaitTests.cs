using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Pipeline;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// <see cref="TransactionServer.WaitForMeldedAsync"/>, the server side of the read-your-writes
/// token (docs/api.md): two servers on one log, the second one's final meld held at a gate so that
/// it lags behind the first for as long as a test needs.
/// </summary>
public sealed class MinOrdinalWaitTests
{
    private static readonly ClusterSettings s_settings = new();

    [Fact]
    public async Task AnOrdinalTheServerMeldedCompletesAtOnce()
    {
        await using var cluster = await StartAsync(1, s_settings);
        var server = cluster.Servers[0];
        var commit = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("a"))]);
        Assert.Equal(TransactionStatus.Committed, commit.Status);

        Assert.True(OrdinalWaitersTests.CompletedAtOnce(server.WaitForMeldedAsync(commit.Ordinal)));
        Assert.True(OrdinalWaitersTests.CompletedAtOnce(server.WaitForMeldedAsync(1)));
    }

    [Fact]
    public async Task ALaggingServerWaitsUntilItMeldsTheOrdinalAndItsNextSnapshotHoldsTheWrite()
    {
        await using var lagging = await LaggingPairAsync(TimeSpan.FromSeconds(30));
        var (first, second, gate) = lagging.Parts;
        gate.Reset();
        var commit = await first.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("mine"))]);
        Assert.Equal(TransactionStatus.Committed, commit.Status);

        // Without the token the lagging server answers from a state without the write.
        var stale = await second.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Get(Key(1))]);
        Assert.False(stale.Results[0].Found);

        var wait = second.WaitForMeldedAsync(commit.Ordinal).AsTask();
        Assert.False(wait.IsCompleted);
        gate.Set();
        await wait.WaitAsync(TimeSpan.FromSeconds(30));

        var fresh = await second.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Get(Key(1))]);
        Assert.True(fresh.Results[0].Found);
        Assert.Equal("mine", System.Text.Encoding.UTF8.GetString(fresh.Results[0].Value!));
        Assert.True(fresh.SnapshotSequence >= commit.Ordinal);
    }

    [Fact]
    public async Task AServerThatDoesNotMeldTheOrdinalWithinItsLimitRefusesWithUnavailableNamingBothOrdinals()
    {
        await using var lagging = await LaggingPairAsync(TimeSpan.FromMilliseconds(200));
        var (first, second, gate) = lagging.Parts;
        gate.Reset();
        var commit = await first.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("mine"))]);

        var e = await Assert.ThrowsAsync<EngineException>(async () => await second.WaitForMeldedAsync(commit.Ordinal));
        Assert.Equal(EngineErrorCode.Unavailable, e.Code);
        Assert.Contains($"not yet #{commit.Ordinal}", e.Message, StringComparison.Ordinal);
        Assert.Contains("server-2", e.Message, StringComparison.Ordinal);
        gate.Set();
    }

    [Fact]
    public async Task CancellingTheCallEndsTheWaitWithCancellation()
    {
        await using var lagging = await LaggingPairAsync(TimeSpan.FromSeconds(30));
        var (first, second, gate) = lagging.Parts;
        gate.Reset();
        var commit = await first.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("mine"))]);

        using var call = new CancellationTokenSource();
        var wait = second.WaitForMeldedAsync(commit.Ordinal, call.Token).AsTask();
        await call.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => wait.WaitAsync(TimeSpan.FromSeconds(30)));
        gate.Set();
    }

    [Fact]
    public async Task StoppingTheServerEndsAWaitWithUnavailable()
    {
        var lagging = await LaggingPairAsync(TimeSpan.FromSeconds(30));
        var (first, second, gate) = lagging.Parts;
        gate.Reset();
        var commit = await first.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("mine"))]);
        var wait = second.WaitForMeldedAsync(commit.Ordinal).AsTask();

        // The server drains its pipeline as it stops: the gate must open for it to finish.
        gate.Set();
        await lagging.DisposeAsync();
        try
        {
            await wait.WaitAsync(TimeSpan.FromSeconds(30));
        }
        catch (EngineException e)
        {
            Assert.Equal(EngineErrorCode.Unavailable, e.Code);
        }

        Assert.True(wait.IsCompleted);
    }

    [Fact]
    public async Task WaitingForAPeersOrdinalWakesAnIdleReaderRatherThanWaitingForItsPoll()
    {
        await using var cluster = await StartAsync(1, s_settings);

        // Idle as soon as the log has been quiet for the follower's 50 ms, and then a poll so rare
        // that only a wake-up can make the second server read the first one's commit.
        var second = await cluster.AddServerAsync(o =>
        {
            o.TailIdleAfter = TimeSpan.Zero;
            o.TailIdlePoll = TimeSpan.FromMinutes(10);
        });
        var first = cluster.Servers[0];
        await cluster.QuiesceAsync();

        // Not for ordering: time for the second server's reader to go from its 1 ms looks to the idle poll.
        await Task.Delay(TimeSpan.FromMilliseconds(500));
        var commit = await first.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(1), Value("mine"))]);
        Assert.Equal(TransactionStatus.Committed, commit.Status);

        await second.WaitForMeldedAsync(commit.Ordinal).AsTask().WaitAsync(TimeSpan.FromSeconds(30));
        var fresh = await second.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Get(Key(1))]);
        Assert.True(fresh.Results[0].Found);
    }

    /// <summary>Two servers; the second one's final meld passes only while the gate is set (it starts set).</summary>
    private static async Task<LaggingPair> LaggingPairAsync(TimeSpan waitLimit)
    {
        var gate = new ManualResetEventSlim(true);
        var cluster = await StartAsync(1, s_settings);
        await cluster.AddServerAsync(o =>
        {
            o.OrdinalWaitTimeout = waitLimit;
            o.StageDelay = (stage, _) =>
            {
                if (stage == PipelineStage.FinalMeld)
                {
                    gate.Wait();
                }
            };
        });
        return new LaggingPair(cluster, gate);
    }

    private sealed class LaggingPair(TestCluster cluster, ManualResetEventSlim gate) : IAsyncDisposable
    {
        public (TransactionServer First, TransactionServer Second, ManualResetEventSlim Gate) Parts => (cluster.Servers[0], cluster.Servers[1], gate);

        public async ValueTask DisposeAsync()
        {
            gate.Set();
            await cluster.DisposeAsync();
            gate.Dispose();
        }
    }
}
