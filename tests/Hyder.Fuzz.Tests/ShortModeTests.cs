using Hyder.Fuzz.Engine;
using Hyder.Fuzz.Targets;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Fuzz.Tests;

/// <summary>
/// The short mode of every target: a few thousand cases, no finding. The long mode (10^6 cases per
/// target) is the tool's default; docs/reliability.md has its figures.
/// </summary>
public sealed class ShortModeTests(ITestOutputHelper output)
{
    public static TheoryData<string> Targets() => [.. TargetRegistry.Names];

    /// <summary>The configuration targets build a configuration per case (about 1 ms); the others take microseconds.</summary>
    private static long CasesFor(string target) => target is "server-config" or "server-args" ? 1_000 : 3_000;

    [Theory]
    [MemberData(nameof(Targets))]
    public void AShortRunFindsNothing(string name)
    {
        using var target = TargetRegistry.Create(name)!;
        var report = new FuzzRunner(new FuzzOptions { Seed = 20240610, Cases = CasesFor(name), CaseTimeout = TimeSpan.FromSeconds(5) }).Run(target);
        output.WriteLine(report.ProgressLine(report.Elapsed));
        foreach (var (message, count) in report.RejectionsByMessage.Take(10))
        {
            output.WriteLine($"  {count,6}  {message}");
        }

        var findings = report.Findings.GroupBy(f => f.Signature).Select(g => g.First().Format(512));
        Assert.True(report.FindingCount == 0, string.Join(Environment.NewLine, findings));
        Assert.Equal(CasesFor(name), report.Cases);

        // A run that only ever hits the first check (or never does) proves little.
        Assert.True(report.Successes > 0, "no case was accepted");
        Assert.True(report.Rejections > 0, "no case was rejected");
    }

    [Theory]
    [MemberData(nameof(Targets))]
    public void EveryCorpusEntryIsAcceptedAsItIs(string name)
    {
        using var target = TargetRegistry.Create(name)!;
        Assert.NotEmpty(target.Corpus);
        foreach (var seed in target.Corpus)
        {
            var result = new FuzzRunner(new FuzzOptions()).RunInput(target, seed, (byte[])seed.Bytes.Clone());
            Assert.True(result.Outcome == CaseOutcome.Success, $"{seed}: {result.Exception}");
        }
    }

    [Theory]
    [MemberData(nameof(Targets))]
    public void ACaseIsTheSameBytesEveryTime(string name)
    {
        using var target = TargetRegistry.Create(name)!;
        using var again = TargetRegistry.Create(name)!;
        for (var n = 0; n < 200; n++)
        {
            var a = FuzzCase.Build(target, 7, n);
            var b = FuzzCase.Build(again, 7, n);
            Assert.Equal(a.Input, b.Input);
            Assert.Equal(a.Steps, b.Steps);
            Assert.Equal(a.Origin.Name, b.Origin.Name);
        }
    }
}
