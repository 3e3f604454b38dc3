using System.Diagnostics;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Xunit;
using Xunit.Abstractions;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// An idle server uses about no CPU (DESIGN §6): its stages block instead of spinning or yielding
/// in a loop, and its reader polls a quiet log rarely. Runs alone (it measures the whole process).
/// </summary>
[Collection(nameof(AllocationTests))]
public sealed class IdleCpuTests(ITestOutputHelper output)
{
    /// <summary>A generous ceiling: a spinning stage or a 1 ms poll loop takes far more, a blocked server far less.</summary>
    private const double MaxIdleShareOfACore = 0.15;

    [Theory]
    [InlineData(0, 0, false)]
    [InlineData(2, 1, true)]
    public async Task AnIdleServerUsesAlmostNoCpu(int t, int d, bool group)
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings { PremeldThreads = t, Distance = d, GroupMeld = group }, o => o.Threading = new());
        var server = cluster.Servers[0];
        for (var i = 0; i < 200; i++)
        {
            var outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(i % 50)), Operation.Put(Key(i % 50), Value($"v{i}"))]);
            Assert.NotEqual(TransactionStatus.Unknown, outcome.Status);
        }

        await cluster.QuiesceAsync();

        // Measurement windows, not an ordering: CPU time, not wall time, is asserted. The quietest
        // of three counts: a spinning stage or a tight poll loop burns CPU in every window, while
        // the tail of an earlier test's work (its servers stopping, finalizers) passes.
        await Task.Delay(1000);
        var process = Process.GetCurrentProcess();
        var shares = new List<double>();
        for (var window = 0; window < 3; window++)
        {
            process.Refresh();
            var cpuBefore = process.TotalProcessorTime;
            var wall = Stopwatch.StartNew();
            await Task.Delay(1500);
            process.Refresh();
            shares.Add((process.TotalProcessorTime - cpuBefore).TotalSeconds / wall.Elapsed.TotalSeconds);
        }

        var share = shares.Min();
        output.WriteLine($"idle server (t={t}, d={d}, group meld {group}, {server.Pipeline.Threading}): {string.Join(", ", shares.Select(x => x.ToString("P1")))} of a core in three 1.5 s windows");
        Assert.True(share < MaxIdleShareOfACore, $"an idle server used at least {share:P1} of a core in each window ({server.Pipeline.Threading})");
    }
}
