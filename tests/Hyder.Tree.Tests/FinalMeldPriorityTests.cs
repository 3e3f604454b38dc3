using Hyder.Tree.Pipeline;
using Xunit;

namespace Hyder.Tree.Tests;

/// <summary>
/// Final meld's scheduling priority (<see cref="PipelineThreading.FinalMeldNice"/>): asked for only
/// when the stages block, set on the final-meld thread itself, and reported as granted or refused.
/// </summary>
public sealed class FinalMeldPriorityTests
{
    [Fact]
    public void TheNiceIsAskedForOnlyWhenTheStagesBlockOnLinux()
    {
        var blocking = new PipelineThreading { Spin = SpinPolicy.SpinThenYield, FinalMeldNice = 5 }.Resolve(1);
        Assert.Equal(OperatingSystem.IsLinux() ? 5 : null, blocking.FinalMeldNice);

        // A spinning stage already holds a core; at a higher priority it would take a shared one.
        Assert.Null(new PipelineThreading { Spin = SpinPolicy.Spin, FinalMeldNice = 5 }.Resolve(1).FinalMeldNice);
        Assert.Null(new PipelineThreading { Spin = SpinPolicy.SpinThenYield, FinalMeldNice = 0 }.Resolve(1).FinalMeldNice);
        Assert.Null(new PipelineThreading { Spin = SpinPolicy.SpinThenYield, FinalMeldNice = null }.Resolve(1).FinalMeldNice);
        // An engine leaves its host's scheduling alone unless the host asks.
        Assert.Null(new PipelineThreading().FinalMeldNice);
        Assert.Null(new PipelineThreading { Spin = SpinPolicy.SpinThenYield }.Resolve(1).FinalMeldNice);
    }

    [Theory]
    [InlineData(-21)]
    [InlineData(20)]
    public void ANiceOutsideTheKernelsRangeIsRefused(int nice)
    {
        var e = Assert.Throws<ArgumentException>(() => new PipelineThreading { Spin = SpinPolicy.SpinThenYield, FinalMeldNice = nice }.Resolve(1));
        Assert.Contains($"FinalMeldNice {nice} is outside -20..19", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void TheFinalMeldThreadRunsAtTheNiceItAskedForAndThePolicySaysSo() => WithPipeline(7, pipeline =>
    {
        // A higher nice (a lower priority) needs no privilege, so this holds for any user.
        if (!OperatingSystem.IsLinux())
        {
            Assert.Null(pipeline.Threading.FinalMeldPriority);
            return;
        }

        Assert.Equal(", final meld at nice 7", pipeline.Threading.FinalMeldPriority);
        Assert.EndsWith("final meld at nice 7", pipeline.Threading.ToString(), StringComparison.Ordinal);
        Assert.Equal(7, NiceOfThread(pipeline.FinalMeldThreadId));
    });

    [Fact]
    public void APipelineLeftAloneReportsNothingAboutPriority() => WithPipeline(0, pipeline =>
    {
        Assert.Null(pipeline.Threading.FinalMeldPriority);
        Assert.DoesNotContain("nice", pipeline.Threading.ToString(), StringComparison.Ordinal);
    });

    [Fact]
    public void ARefusalNamesWhatWouldGrantIt()
    {
        Assert.Equal(
            ", final meld's priority not raised: nice -10 needs CAP_SYS_NICE or RLIMIT_NICE of at least 30 (systemd: LimitNICE=-10)",
            CoreAffinity.RefusedNice(-10, 13));
        Assert.Contains("needs CAP_SYS_NICE", CoreAffinity.RefusedNice(-5, 1), StringComparison.Ordinal);
        Assert.Equal(", final meld's priority not changed: setpriority to nice -5 failed with errno 3", CoreAffinity.RefusedNice(-5, 3));
    }

    /// <summary>Runs <paramref name="check"/> on a threaded pipeline (final meld only, stages that block) asking for <paramref name="nice"/>, then stops it.</summary>
    private static void WithPipeline(int nice, Action<ThreadedPipeline> check)
    {
        var pipeline = new ThreadedPipeline(new Database(), new PipelineOptions(0, 0, false), new PipelineRuntime
        {
            Threading = new PipelineThreading { Spin = SpinPolicy.SpinThenYield, FinalMeldNice = nice },
        });
        try
        {
            check(pipeline);
        }
        finally
        {
            pipeline.Dispose();
        }
    }

    /// <summary>
    /// The nice value of this process's thread <paramref name="tid"/> (field 19 of its stat), which
    /// must be a final-meld thread: other tests run pipelines of their own at the same time.
    /// </summary>
    private static int NiceOfThread(int tid)
    {
        var task = $"/proc/self/task/{tid}";
        Assert.Equal("final-meld", File.ReadAllText(Path.Combine(task, "comm")).TrimEnd('\n'));

        // The fields after the name, which sits in parentheses and may hold spaces: state is field 3.
        var stat = File.ReadAllText(Path.Combine(task, "stat"));
        var fields = stat[(stat.LastIndexOf(')') + 2)..].Split(' ');
        return int.Parse(fields[19 - 3], System.Globalization.CultureInfo.InvariantCulture);
    }
}
