using Hyder.Checker;
using Hyder.Soak;
using Hyder.Soak.Cluster;
using Hyder.Soak.Workload;
using Hyder.Testing;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>The soak command's bounded rule, its disk sampler, its bookkeeping of retired lists and its argument checks (the long run itself is docs/reliability.md's).</summary>
public sealed class SoakTests
{
    private static Sample[] Samples(Func<int, long> rss, int count = 40) =>
        [.. Enumerable.Range(0, count).Select(i => new Sample(TimeSpan.FromMinutes(i), "server-1", 42, 1, rss(i), i / 10, 10 << 20, i * 100))];

    [Fact]
    public void ASteadyResidentSetIsFlatAndTheWarmUpDoesNotCount()
    {
        // A climb during the first 10 % (warm-up), then steady with noise.
        var judgement = SoakCommand.Judge("server-1", Samples(i => i < 4 ? (50 + i * 20) << 20 : (130L << 20) + (i % 3 << 20)));
        Assert.True(judgement.Bounded, judgement.ToString());
        Assert.InRange(judgement.Change, -0.02, 0.02);
        Assert.InRange(judgement.SlopeMiBPerHour, -5, 5);
        Assert.Equal(3.0 / 35, judgement.Gen2PerMinute!.Value, 3);
    }

    [Fact]
    public void AResidentSetThatKeepsGrowingIsNot()
    {
        // 1 MiB a minute from 100 MiB: the last quartile's mean is about 27 % above the first's.
        var judgement = SoakCommand.Judge("server-1", Samples(i => (100L + i) << 20));
        Assert.False(judgement.Bounded, judgement.ToString());
        Assert.Equal("GROWING", judgement.Verdict);
        Assert.Equal(60, judgement.SlopeMiBPerHour, 3);
    }

    private static (TimeSpan, double)[] Series(Func<int, double> value, int count = 40) =>
        [.. Enumerable.Range(0, count).Select(i => (TimeSpan.FromMinutes(i), value(i)))];

    [Theory]
    [InlineData(100, 109, true, "bounded")]
    [InlineData(100, 111, false, "GROWING")]
    [InlineData(100, 91, true, "bounded")]
    [InlineData(100, 89, false, "SHRINKING")]
    public void TheRuleIsPlusOrMinusTenPercentOfTheFirstQuartileAfterWarmUp(double first, double last, bool bounded, string verdict)
    {
        // Warm-up (4 of 40 samples) at 1, then 9 samples at first, 18 between, 9 at last.
        var trend = SoakCommand.JudgeTrend(Series(i => i < 4 ? 1 : i < 13 ? first : i < 31 ? (first + last) / 2 : last));
        Assert.Equal(first, trend.Q1, 6);
        Assert.Equal(last, trend.Q4, 6);
        Assert.Equal((last - first) / first, trend.Change, 6);
        Assert.Equal(bounded, trend.Bounded);
        Assert.Equal(verdict, trend.Verdict);
    }

    [Fact]
    public void AFigureThatStartsAtZeroIsBoundedOnlyIfItStaysThere()
    {
        Assert.True(SoakCommand.JudgeTrend(Series(_ => 0)).Bounded);
        var grown = SoakCommand.JudgeTrend(Series(i => i < 20 ? 0 : 1));
        Assert.False(grown.Bounded);
        Assert.Equal("GROWING", grown.Verdict);
        Assert.Equal("too few samples to judge", SoakCommand.JudgeTrend(Series(i => i, count: 3)).Verdict);
    }

    [Fact]
    public void TheDiskSamplerSumsEveryFileAndCountsSegmentFiles()
    {
        using var temp = new TempDirectory("hyder-soak-disk-");
        File.WriteAllBytes(Path.Combine(temp.Path, "segment-00000003.log"), new byte[8224 * 3 + 64]);
        File.WriteAllBytes(Path.Combine(temp.Path, "segment-00000007.log"), new byte[64]);
        File.WriteAllBytes(Path.Combine(temp.Path, "unit.meta"), new byte[32]);
        File.WriteAllBytes(Path.Combine(temp.Path, "segment-x.log"), new byte[5]);
        Directory.CreateDirectory(Path.Combine(temp.Path, "sub"));
        File.WriteAllBytes(Path.Combine(temp.Path, "sub", "more"), new byte[1000]);

        var usage = DiskUsage.Measure(temp.Path);

        Assert.Equal(8224 * 3 + 64 + 64 + 32 + 5 + 1000, usage.Bytes);
        Assert.Equal(2, usage.Segments);
        Assert.Equal(7L, usage.HighestSegment);
        Assert.Equal(DiskUsage.None, DiskUsage.Measure(Path.Combine(temp.Path, "absent")));
        Assert.Equal(12L, DiskUsage.SegmentIndex("segment-00000012.log"));
        Assert.Null(DiskUsage.SegmentIndex("segment-00000012.log.tmp"));
    }

    [Fact]
    public void TheLogsDiskIsTheUnitsSumAndSegmentsDeletedAreThoseGoneBelowTheHighest()
    {
        // Two units in a chain: each grows to 4 segments (0-3), a trim deletes 0-1 at minute 20;
        // the projection store keeps 1 KiB throughout.
        var samples = new List<Sample>();
        for (var i = 0; i < 40; i++)
        {
            var (present, highest) = i < 20 ? (Math.Min(4, 1 + i / 5), Math.Min(3, i / 5)) : (2, 3);
            foreach (var unit in new[] { "unit-1", "unit-2" })
            {
                samples.Add(new Sample(TimeSpan.FromMinutes(i), unit, 1, 1, 50 << 20, null, null, null, present * (8L << 20), present, highest));
            }

            samples.Add(new Sample(TimeSpan.FromMinutes(i), "projection", 1, 1, 50 << 20, null, null, null, 1024, 0, -1));
        }

        var judgements = SoakCommand.JudgeDisk(samples, ["projection", "unit-1", "unit-2"]);

        Assert.Equal(["projection", "unit-1", "unit-2", "log (all units)"], judgements.Select(j => j.Process));
        var log = judgements[^1];
        Assert.Equal(2 * 4 * (8L << 20), log.Max);
        Assert.Equal(4, log.SegmentsAtEnd);
        Assert.Equal(4, log.SegmentsDeleted);
        Assert.Equal(2, judgements[1].SegmentsDeleted);
        Assert.Equal(2 * judgements[1].Trend.Q4, log.Trend.Q4, 6);
        Assert.True(judgements[0].Bounded);
        Assert.Equal(0, judgements[0].SegmentsDeleted);
    }

    [Fact]
    public void ServerRestartsAreGroupedBySpanOfLoadWithoutTheUnits()
    {
        static KillRecord Kill(string victim, double minutes, double restartSeconds) => new(victim, TimeSpan.FromMinutes(minutes), TimeSpan.FromSeconds(1), TimeSpan.FromSeconds(restartSeconds));

        var spans = SoakCommand.ServerRestarts(
            [Kill("server-2", 1, 2), Kill("unit-2", 2, 30), Kill("server-3", 3, 4), Kill("server-2", 9.9, 3), Kill("server-3", 55, 1.5)],
            TimeSpan.FromMinutes(10));

        Assert.Equal(2, spans.Count);
        Assert.Equal((TimeSpan.Zero, TimeSpan.FromMinutes(10), 3), (spans[0].From, spans[0].To, spans[0].Count));
        Assert.Equal(TimeSpan.FromSeconds(3), spans[0].Median);
        Assert.Equal(TimeSpan.FromSeconds(3), spans[0].Mean);
        Assert.Equal(TimeSpan.FromSeconds(4), spans[0].Max);
        Assert.Equal((TimeSpan.FromMinutes(50), 1, TimeSpan.FromSeconds(1.5)), (spans[1].From, spans[1].Count, spans[1].Max));
    }

    [Fact]
    public void TrimsAreCountedFromTheServersLogs()
    {
        using var temp = new TempDirectory("hyder-soak-trims-");
        var one = Path.Combine(temp.Path, "server-1.log");
        var two = Path.Combine(temp.Path, "server-2.log");
        File.WriteAllLines(one, ["info: server-1: trimmed the log below @1200 (keeping the last 2 checkpoints)", "info: something else", "info: server-1: trimmed the log below @5400 (keeping the last 2 checkpoints)"]);
        File.WriteAllLines(two, ["info: server-2: trimmed the log below @3300 (keeping the last 2 checkpoints)"]);

        Assert.Equal((3, 5400L), SoakCommand.TrimsLogged([one, two, Path.Combine(temp.Path, "server-3.log")]));
    }

    [Fact]
    public void ARetiredListIsQueuedForItsDeleteOnlyWhenNoTransactionThatNamesItIsInFlight()
    {
        var lists = new RetiredLists(maxWritesPerKey: 3);
        Mop[] reading = [Mop.ReadUnknown(7), Mop.Append(8, 1)];
        Mop[] retiring = [Mop.Append(7, 3)];
        lists.Began(reading);
        lists.Began(retiring);
        Assert.Equal(1, lists.Pending);

        lists.Ended(retiring);
        Assert.False(lists.TryTake(out _)); // the reader of list 7 is still in flight
        lists.Ended(reading);
        Assert.True(lists.TryTake(out var key));
        Assert.Equal(7L, key);
        Assert.False(lists.TryTake(out _)); // list 8 never retired

        lists.Again(7);
        Assert.Equal(1, lists.Pending);
        Assert.True(lists.TryTake(out key));
        Assert.Equal(0, lists.Pending);
    }

    [Theory]
    [InlineData("--minutes 0", "--minutes 0 must be above 0")]
    [InlineData("--units 3", "--units 3: units come in chains of two")]
    [InlineData("--servers 1", "--servers 1 is below the least allowed, 2")]
    [InlineData("--sample-seconds 0", "--sample-seconds 0 is below the least allowed, 1")]
    [InlineData("--trim-margin -1", "--trim-margin -1 is below the least allowed, 0")]
    [InlineData("--slots-per-segment 8", "--slots-per-segment 8 is below the least allowed, 16")]
    public async Task BadArgumentsExitWithTwoAndNameTheOption(string arguments, string message)
    {
        var error = new StringWriter();
        var saved = Console.Error;
        Console.SetError(error);
        try
        {
            Assert.Equal(2, await SoakCommand.RunAsync(arguments.Split(' ')));
        }
        finally
        {
            Console.SetError(saved);
        }

        Assert.Contains(message, error.ToString(), StringComparison.Ordinal);
    }
}
