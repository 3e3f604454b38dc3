using Hyder.Server.Diagnostics;
using Xunit;

namespace Hyder.Server.Tests;

/// <summary>The thread CPU figures behind the CPU budget per stage (<see cref="StageBudget"/>) and the server benchmark.</summary>
public sealed class ThreadTimesTests
{
    [Theory]
    [InlineData("premeld-3", "premeld")]
    [InlineData("deserialize-12", "deserialize")]
    [InlineData("final-meld", "final-meld")]
    [InlineData("group-meld", "group-meld")]
    [InlineData("submit", "submit")]
    [InlineData("x-", "x-")]
    [InlineData(".NET TP Worker", ThreadTimes.PoolGroup)]
    [InlineData(".NET Long Runni", ThreadTimes.PoolGroup)]
    public void AThreadsGroupIsItsNameWithoutATrailingNumber(string comm, string group) =>
        Assert.Equal(group, ThreadTimes.Group(comm));

    [Fact]
    public void OneStretchInEveryFewPerStageAndThreadIsTimedAndCountedThatManyTimes()
    {
        using var metrics = new ServerMetrics("sampler");
        var timed = 0;
        var spent = 0L;

        // A fresh thread: the sampling counters are per thread.
        var worker = new Thread(() =>
        {
            for (var i = 0; i < 4 * ServerMetrics.CpuSampleEvery; i++)
            {
                var start = ServerMetrics.StartCpu(ExecutorStage.Encode);
                if (start >= 0)
                {
                    timed++;
                    var t0 = Tree.Pipeline.ThreadCpu.NowNs();
                    while (Tree.Pipeline.ThreadCpu.NowNs() - t0 < 2_000_000)
                    {
                    }

                    spent += Tree.Pipeline.ThreadCpu.NowNs() - t0;
                }

                metrics.EndCpu(ExecutorStage.Encode, start);
            }

            // Another stage keeps its own count: its first stretches are not timed.
            metrics.EndCpu(ExecutorStage.Outcome, ServerMetrics.StartCpu(ExecutorStage.Outcome));
        });
        worker.Start();
        worker.Join();

        Assert.Equal(4, timed);
        var counted = metrics.CpuNanoseconds(ExecutorStage.Encode);
        Assert.InRange(counted, spent * ServerMetrics.CpuSampleEvery, (spent + 4_000_000) * ServerMetrics.CpuSampleEvery);
        Assert.Equal(0, metrics.CpuNanoseconds(ExecutorStage.Outcome));
    }

    [Fact]
    public void OneInteractiveOperationInSixtyFourIsTimedAsExecuteApartFromTheStagesCount()
    {
        using var metrics = new ServerMetrics("sampler");
        var timed = 0;
        var spent = 0L;
        var stageTimed = 0;
        var worker = new Thread(() =>
        {
            for (var i = 0; i < 2 * ServerMetrics.OperationCpuSampleEvery; i++)
            {
                // One-shot execute stretches in between do not move the operations' count.
                if (ServerMetrics.StartCpu(ExecutorStage.Execute) >= 0)
                {
                    stageTimed++;
                }

                var start = ServerMetrics.StartOperationCpu();
                if (start >= 0)
                {
                    timed++;
                    var t0 = Tree.Pipeline.ThreadCpu.NowNs();
                    while (Tree.Pipeline.ThreadCpu.NowNs() - t0 < 2_000_000)
                    {
                    }

                    spent += Tree.Pipeline.ThreadCpu.NowNs() - t0;
                }

                metrics.EndOperationCpu(start);
            }
        });
        worker.Start();
        worker.Join();

        Assert.Equal(2, timed);
        Assert.Equal(2 * ServerMetrics.OperationCpuSampleEvery / ServerMetrics.CpuSampleEvery, stageTimed);
        Assert.InRange(metrics.CpuNanoseconds(ExecutorStage.Execute), spent * ServerMetrics.OperationCpuSampleEvery, (spent + 2_000_000) * ServerMetrics.OperationCpuSampleEvery);
    }

    [Fact]
    public void ANamedThreadThatSpinsShowsUpInItsGroup()
    {
        if (!OperatingSystem.IsLinux())
        {
            return;
        }

        var before = ThreadTimes.Capture();

        // The spinner stays alive until it is captured: an exited thread is gone from /proc.
        var live = new ManualResetEventSlim();
        var done = new ManualResetEventSlim();
        var spinner = new Thread(() =>
        {
            // 300 ms of this thread's own CPU (a loaded machine stretches the wall time, not this).
            var start = Tree.Pipeline.ThreadCpu.NowNs();
            var x = 0L;
            while (Tree.Pipeline.ThreadCpu.NowNs() - start < 300_000_000)
            {
                x++;
            }

            GC.KeepAlive(x);
            live.Set();
            done.Wait();
        })
        { Name = "spinner-2" };
        spinner.Start();
        live.Wait();
        var captured = ThreadTimes.Capture();
        done.Set();
        spinner.Join();

        Assert.True(ThreadTimes.ByGroup(captured).GetValueOrDefault("spinner") > 0.1, "a thread that spun 300 ms of CPU shows at least 0.1 s");
        Assert.True(ThreadTimes.Delta(before, captured).GetValueOrDefault("spinner") > 0.1, "a thread started after the first capture counts whole");
        Assert.All(ThreadTimes.Delta(before, captured).Values, v => Assert.True(v >= 0));
    }
}
