using System.Globalization;
using System.Text.RegularExpressions;
using Xunit;

namespace Hyder.Simulation.Tests;

public sealed class SimCommandTests
{
    private static (int Code, string Output, string Error) Run(params string[] args)
    {
        using var output = new StringWriter();
        using var error = new StringWriter();
        var code = SimCommand.Run(args, output, error);
        return (code, output.ToString(), error.ToString());
    }

    [Theory]
    [InlineData(new string[0], "give exactly one of")]
    [InlineData(new[] { "--seed", "1", "--seeds", "2" }, "give exactly one of")]
    [InlineData(new[] { "--seeds", "x" }, "sim:")]
    [InlineData(new[] { "--seed", "1", "--faults", "hurricane" }, "unknown fault profile 'hurricane'")]
    [InlineData(new[] { "--seed", "1", "--isolation", "chaos" }, "--isolation takes serializable or si")]
    [InlineData(new[] { "--seed" }, "--seed needs a value")]
    [InlineData(new[] { "--bogus", "1" }, "unknown option '--bogus'")]
    public void BadArgumentsExitWithCode2AndSaySo(string[] args, string message)
    {
        var (code, _, error) = Run(args);
        Assert.Equal(2, code);
        Assert.Contains(message, error);
        Assert.Contains("usage: sim", error);
    }

    [Fact]
    public void ASeedReplaysWithItsTraceAndExits0()
    {
        var (code, output, _) = Run("--seed", "5", "--faults", "none", "--duration-ms", "200");
        Assert.Equal(0, code);
        Assert.Contains("seed 5: ok", output);
        Assert.Contains("meld #1", output);
        Assert.Contains("valid for Serializable", output);
    }

    [Fact]
    public void SeedsReportTheirTotalsAndTheirFailedAttemptsByCause()
    {
        var (code, output, _) = Run("--seeds", "3", "--start", "10", "--duration-ms", "300");
        Assert.Equal(0, code);
        Assert.Contains("3 seeds passed (10..12) with faults 'default'", output);
        Assert.Contains("totals: txns ok", output);
        Assert.Matches(@"per seed: \d+ transactions committed, \d+ ordinals melded, [\d.]+ s of virtual time with clients and faults", output);
        Assert.Matches(@"while faults were on: servers serving \d+ %, starting \d+ %, down \d+ % of their time; log impaired \d+ %", output);
        Assert.Matches(@"server starts: \d+ served after \d+ ms on average", output);
        Assert.Matches(@"trims: [\d.]+ per seed \(in \d of 3 seeds\); restarts from a checkpoint: [\d.]+ per seed \(in \d\); servers behind the trim: [\d.]+ per seed \(in \d\)", output);

        // Every failed attempt is counted under one cause, and the causes add up to the total.
        var failed = int.Parse(Regex.Match(output, @"totals: txns ok \d+ / fail (\d+)").Groups[1].Value, CultureInfo.InvariantCulture);
        var byCause = Regex.Matches(output, @"^\s+(\d+)\s+[\d.]+ %  (server down|server starting|refused|aborted by meld)", RegexOptions.Multiline);
        Assert.NotEmpty(byCause);
        Assert.Equal(failed, byCause.Sum(m => int.Parse(m.Groups[1].Value, CultureInfo.InvariantCulture)));
    }

    [Fact]
    public void TheBroadcastProfileTurnsBroadcastOnAndReportsWhatItCarried()
    {
        var (code, output, _) = Run("--seeds", "1", "--faults", "broadcast", "--duration-ms", "300");
        Assert.Equal(0, code);
        Assert.Contains("1 seeds passed (1..1) with faults 'broadcast'", output);
        Assert.Matches(@"broadcast: published [1-9]\d*, delivered \d+, taken by readers [1-9]\d*; lost \d+, cut \d+, duplicated \d+, delayed \d+, reordered \d+; forged \(delivered / taken\) wrong content \d+ / \d+, misplaced \d+ / \d+, hole \d+ / \d+ \(servers check every peer's block against the log\)", output);

        var (trustCode, trusting, _) = Run("--seed", "3", "--broadcast", "--trust-broadcast", "--duration-ms", "200");
        Assert.Equal(0, trustCode);
        Assert.Contains("seed 3: ok", trusting);
        Assert.DoesNotContain("broadcast: forged", trusting);
    }

    [Fact]
    public void LongTakesTheLongModeAndADurationCapsIt()
    {
        // The long mode's own figures are the Stress test's; here the cap: 200 ms, not 1,000 commits.
        var (code, output, _) = Run("--seeds", "1", "--long", "--faults", "none", "--duration-ms", "200");
        Assert.Equal(0, code);
        Assert.Contains("1 seeds passed (1..1) with faults 'none'", output);
        Assert.Contains("ordinals melded, 0.2 s of virtual time with clients and faults", output);
        var committed = int.Parse(Regex.Match(output, @"per seed: (\d+) transactions committed").Groups[1].Value, CultureInfo.InvariantCulture);
        Assert.InRange(committed, 1, 999);
    }
}
