using System.Diagnostics;
using Hyder.Checker.Tests.Simulation;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Checker.Tests;

/// <summary>The graph machinery at scale: deep components without recursion, and a large serial history.</summary>
public sealed class GraphTests(ITestOutputHelper output)
{
    [Fact]
    public void TarjanHandlesAMillionNodeCycleWithoutRecursion()
    {
        const int N = 1_000_000;
        var g = new DependencyGraph(N);
        for (var i = 0; i < N; i++)
        {
            g.Add(new Edge(i, (i + 1) % N, EdgeKind.WW, true, 0, i, i + 1));
        }

        g.Add(new Edge(5, 3, EdgeKind.RW, true, 0, null, null));
        g.Seal();
        var (component, cycles) = StronglyConnected.Find(g, EdgeKind.WW);
        Assert.Equal(N, Assert.Single(cycles).Length);
        Assert.All(component, c => Assert.Equal(component[0], c));
    }

    [Fact]
    public void ComponentsAreFoundPerEdgeKind()
    {
        // 0 -> 1 -> 2 -> 0 by ww and rw; 3 <-> 4 by wr; 5 alone.
        var g = new DependencyGraph(6);
        g.Add(new Edge(0, 1, EdgeKind.WW, true, 0, null, null));
        g.Add(new Edge(1, 2, EdgeKind.WW, true, 0, null, null));
        g.Add(new Edge(2, 0, EdgeKind.RW, true, 0, null, null));
        g.Add(new Edge(3, 4, EdgeKind.WR, true, 0, null, null));
        g.Add(new Edge(4, 3, EdgeKind.WR, true, 0, null, null));
        g.Add(new Edge(2, 5, EdgeKind.WW, true, 0, null, null));
        g.Seal();
        Assert.Empty(StronglyConnected.Find(g, EdgeKind.WW).Cycles);
        Assert.Equal([[3, 4]], StronglyConnected.Find(g, EdgeKind.WW | EdgeKind.WR).Cycles.Select(c => c.Order().ToArray()));
        Assert.Equal(2, StronglyConnected.Find(g, EdgeKind.Data).Cycles.Count);
    }

    [Fact]
    public void AHundredThousandTransactionSerialHistoryChecksInSeconds()
    {
        var clock = Stopwatch.StartNew();
        var run = Executor.Run(new SimConfig(42, 100_000, 10, ExecutorMode.Serial, new WorkloadOptions { ActiveKeys = 10, MaxOps = 6 }));
        var generated = clock.Elapsed;
        var r = HistoryChecker.Check(run.History, new CheckOptions { Model = ConsistencyModel.StrictSerializable });
        output.WriteLine($"generated in {generated.TotalSeconds:F2} s; {r}");
        Assert.True(r.Valid, r.ToString());
        Assert.Empty(r.Anomalies);
        Assert.True(r.Stats.WW + r.Stats.WR + r.Stats.RW > 100_000, "the history has too few dependencies to mean anything");
    }
}
