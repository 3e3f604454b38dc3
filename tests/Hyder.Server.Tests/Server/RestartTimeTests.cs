using Hyder.Testing;
using System.Diagnostics;
using Hyder.Log;
using Hyder.Log.Embedded;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// Restart cost is bounded by the checkpoint and the log since it, not by the history: a server
/// restarted after N and after 2N transactions on a bounded key space reads about as many blocks
/// (docs/server.md, "Restart time"); one replaying the whole log reads twice as many.
/// </summary>
public sealed class RestartTimeTests(ITestOutputHelper output)
{
    private const int Keys = 1000;
    private const int After = 100;

    [Fact]
    [Trait("Category", "Stress")]
    public async Task RestartAfterNAndAfter2NTransactionsReadsTheCheckpointAndTheLogSinceIt()
    {
        var n = int.TryParse(Environment.GetEnvironmentVariable("HYDER_RESTART_N"), out var v) ? v : 1500;
        var settings = new ClusterSettings { PremeldThreads = 1, Distance = 1, GroupMeld = true, BlockSize = 8192 };
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await using var server = await TransactionServer.StartAsync(log, TestCluster.Options("loader", settings));

        await LoadAsync(server, n, seed: 1);
        var first = await RestartAsync(log, server, settings, fromCheckpoint: true);
        await LoadAsync(server, n, seed: 2);
        var second = await RestartAsync(log, server, settings, fromCheckpoint: true);
        var replay = await RestartAsync(log, server, settings, fromCheckpoint: false);

        output.WriteLine($"N = {n} transactions on {Keys} keys, then a checkpoint and {After} more; {Environment.ProcessorCount} cores");
        output.WriteLine($"restart after N:  {first.Reads} blocks read, {first.Time.TotalMilliseconds:F0} ms (log tail @{first.Tail})");
        output.WriteLine($"restart after 2N: {second.Reads} blocks read, {second.Time.TotalMilliseconds:F0} ms (log tail @{second.Tail})");
        output.WriteLine($"replay after 2N:  {replay.Reads} blocks read, {replay.Time.TotalMilliseconds:F0} ms");
        Assert.True(second.Reads < first.Reads * 5 / 4, $"after 2N a restart read {second.Reads} blocks, after N {first.Reads}");
        Assert.True(replay.Reads > second.Reads * 2, $"a replay of the whole log read {replay.Reads} blocks, a restart {second.Reads}");
    }

    private static async Task LoadAsync(TransactionServer server, int transactions, int seed)
    {
        await Task.WhenAll(Enumerable.Range(0, 4).Select(c => Task.Run(async () =>
        {
            var rng = new Random((seed * 100) + c);
            for (var i = c; i < transactions; i += 4)
            {
                var value = new byte[100];
                rng.NextBytes(value);
                await server.ExecuteAsync(IsolationLevel.SnapshotIsolation, [Operation.Put(TestCluster.Key(rng.Next(Keys)), value)]);
            }
        })));
    }

    private static async Task<(long Reads, TimeSpan Time, long Tail)> RestartAsync(ISharedLog log, TransactionServer server, ClusterSettings settings, bool fromCheckpoint)
    {
        if (fromCheckpoint)
        {
            await server.CheckpointAsync();
            await LoadAsync(server, After, seed: 3);
        }

        var tail = await log.TailAsync();
        var counting = new CountingLog(log);
        var options = TestCluster.Options("restarted", settings);
        options.RecoverFromCheckpoint = fromCheckpoint;
        var clock = Stopwatch.StartNew();
        await using var restarted = await TransactionServer.StartAsync(counting, options);
        clock.Stop();
        Assert.Equal((await server.GetStateHashAsync(0)).Hash, (await restarted.GetStateHashAsync(server.LastMelded)).Hash);
        return (counting.Reads, clock.Elapsed, tail);
    }

    private sealed class CountingLog(ISharedLog inner) : DelegatingLog(inner)
    {
        private long _reads;

        public long Reads => Interlocked.Read(ref _reads);

        public override ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default)
        {
            Interlocked.Increment(ref _reads);
            return Inner.ReadAsync(address, destination, cancellationToken);
        }

    }
}
