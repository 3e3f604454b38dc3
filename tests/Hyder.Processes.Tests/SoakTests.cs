using Hyder.Soak;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>The soak command's flatness rule and its argument checks (the long run itself is docs/reliability.md's).</summary>
public sealed class SoakTests
{
    private static Sample[] Samples(Func<int, long> rss, int count = 40) =>
        [.. Enumerable.Range(0, count).Select(i => new Sample(TimeSpan.FromMinutes(i), "server-1", 42, 1, rss(i), i / 10, 10 << 20, i * 100))];

    [Fact]
    public void ASteadyResidentSetIsFlatAndTheWarmUpDoesNotCount()
    {
        // A climb during the first 10 % (warm-up), then steady with noise.
        var judgement = SoakCommand.Judge("server-1", Samples(i => i < 4 ? (50 + i * 20) << 20 : (130L << 20) + (i % 3 << 20)));
        Assert.True(judgement.Flat, judgement.ToString());
        Assert.InRange(judgement.Growth, -0.02, 0.02);
        Assert.InRange(judgement.SlopeMiBPerHour, -5, 5);
        Assert.Equal(3.0 / 35, judgement.Gen2PerMinute!.Value, 3);
    }

    [Fact]
    public void AResidentSetThatKeepsGrowingIsNot()
    {
        // 1 MiB a minute from 100 MiB: the last quartile's mean is about 27 % above the first's.
        var judgement = SoakCommand.Judge("server-1", Samples(i => (100L + i) << 20));
        Assert.False(judgement.Flat, judgement.ToString());
        Assert.Equal("GROWING", judgement.Verdict);
        Assert.Equal(60, judgement.SlopeMiBPerHour, 3);
    }

    [Theory]
    [InlineData("--minutes 0", "--minutes 0 must be above 0")]
    [InlineData("--units 3", "--units 3: units come in chains of two")]
    [InlineData("--servers 1", "--servers 1 is below the least allowed, 2")]
    [InlineData("--sample-seconds 0", "--sample-seconds 0 is below the least allowed, 1")]
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
