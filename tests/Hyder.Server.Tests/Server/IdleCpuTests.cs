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

        // A measurement window, not an ordering: CPU time, not wall time, is asserted.
        await Task.Delay(2000);
        var process = Process.GetCurrentProcess();
        process.Refresh();
        var cpuBefore = process.TotalProcessorTime;
        var wall = Stopwatch.StartNew();
        await Task.Delay(3000);
        process.Refresh();
        var share = (process.TotalProcessorTime - cpuBefore).TotalSeconds / wall.Elapsed.TotalSeconds;
        output.WriteLine($"idle server (t={t}, d={d}, group meld {group}, {server.Pipeline.Threading}): {share:P1} of a core over {wall.Elapsed.TotalSeconds:F1} s");
        Assert.True(share < MaxIdleShareOfACore, $"an idle server used {share:P1} of a core ({server.Pipeline.Threading})");
    }
}
