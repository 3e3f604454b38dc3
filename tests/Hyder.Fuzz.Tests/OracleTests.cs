using Hyder.Fuzz.Engine;
using Xunit;

namespace Hyder.Fuzz.Tests;

/// <summary>The oracle catches planted faults of every kind it claims to, and each finding replays.</summary>
public sealed class OracleTests
{
    private static TargetReport Fuzz(ToyTarget target, long cases = 2_000, int timeoutMs = 1_000) =>
        new FuzzRunner(new FuzzOptions { Seed = 3, Cases = cases, CaseTimeout = TimeSpan.FromMilliseconds(timeoutMs) }).Run(target);

    [Fact]
    public void ACarefulDecoderHasNoFindings()
    {
        using var target = new ToyTarget(ToyBug.None);
        var report = Fuzz(target);
        Assert.Equal(0, report.FindingCount);
        Assert.True(report.Successes > 0 && report.Rejections > 0);
        Assert.Contains(report.RejectionsByMessage, r => r.Key.StartsWith("ArgumentException: length # is more than", StringComparison.Ordinal));
    }

    [Fact]
    public void AnIndexOutOfRangeIsACrashThatReplays()
    {
        using var target = new ToyTarget(ToyBug.IndexOutOfRange);
        var report = Fuzz(target);
        var finding = Assert.IsType<Finding>(report.Findings.FirstOrDefault(f => f.Kind == FindingKind.Crash));
        Assert.IsType<IndexOutOfRangeException>(finding.Exception);
        Assert.Contains($"--target {target.Name} --seed 3 --case {finding.Case.Number}", finding.Format(), StringComparison.Ordinal);
        Assert.Contains("00000000  ", finding.Format(), StringComparison.Ordinal);

        // The replay of that case number gives the same bytes and the same finding.
        var replay = new FuzzRunner(new FuzzOptions { Seed = 3 }).RunCase(target, finding.Case.Number);
        Assert.Equal(finding.Case.Input, replay.Case.Input);
        Assert.Equal(FindingKind.Crash, replay.Finding?.Kind);
    }

    [Fact]
    public void AllocationOutOfProportionToTheInputIsAFinding()
    {
        using var target = new ToyTarget(ToyBug.UnboundedAllocation);
        var report = Fuzz(target);
        var finding = Assert.Single(report.Findings.Where(f => f.Kind == FindingKind.Allocation).Take(1));
        Assert.True(finding.Allocated > target.AllocationBound(finding.Case.Input.Length));
    }

    [Fact]
    public void ACaseThatNeverReturnsIsAHangAndTheRunGoesOn()
    {
        using var target = new ToyTarget(ToyBug.Loop);
        try
        {
            var report = Fuzz(target, cases: 300, timeoutMs: 200);
            Assert.Contains(report.Findings, f => f.Kind == FindingKind.Hang);
            Assert.Equal(300, report.Cases);
            Assert.True(report.Successes > 0, "the run stopped at the first hang");
        }
        finally
        {
            ToyTarget.ReleaseLoops();
        }
    }

    [Fact]
    public void ASlowCaseIsAHang()
    {
        using var target = new ToyTarget(ToyBug.Slow);
        var report = Fuzz(target, cases: 60, timeoutMs: 150);
        Assert.Contains(report.Findings, f => f.Kind == FindingKind.Hang);
    }

    /// <summary>
    /// A case over the budget runs again before it is called a hang: one that finishes the second
    /// time (the machine, not the decoder, was slow) is counted, not reported.
    /// </summary>
    [Fact]
    public void ACaseOverTheBudgetOnlyOnceIsCountedSlowNotReportedAsAHang()
    {
        using var target = new ToyTarget(ToyBug.SlowOnce);
        var report = Fuzz(target, cases: 60, timeoutMs: 150);
        Assert.Equal(0, report.FindingCount);
        Assert.Equal(1, report.SlowCases);
        Assert.Equal(60, report.Cases);
        Assert.Contains("1 slow once", report.ProgressLine(report.Elapsed), StringComparison.Ordinal);
    }

    [Fact]
    public void ADocumentedExceptionWithoutAMessageIsUnclear()
    {
        using var target = new ToyTarget(ToyBug.NoMessage);
        var report = Fuzz(target, cases: 200);
        Assert.Contains(report.Findings, f => f.Kind == FindingKind.UnclearError);
    }

    [Fact]
    public void ArgumentExceptionDoesNotCoverAnUncheckedArgumentOutOfRange()
    {
        using var target = new ToyTarget(ToyBug.ArgumentOutOfRange);
        var report = Fuzz(target, cases: 500);
        Assert.NotEmpty(report.Findings);
        var finding = report.Findings[0];
        Assert.Equal(FindingKind.Crash, finding.Kind);
        Assert.IsType<ArgumentOutOfRangeException>(finding.Exception);
    }

    [Fact]
    public void RejectionsGroupByMessageWithNumbersBlanked() =>
        Assert.Equal("IntentionFormatException: block length # is outside #..# (the bytes given)",
            Oracle.Normalize(new Hyder.Tree.Serialization.IntentionFormatException("block length 4294967295 is outside 14..1048576 (the bytes given)")));
}
