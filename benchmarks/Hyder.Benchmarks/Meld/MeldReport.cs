using System.Diagnostics;
using System.Globalization;
using Hyder.Tree.Memory;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// The <c>report</c> command: measures every configuration with a Stopwatch (median of several
/// repetitions) plus the counters BenchmarkDotNet cannot show, and writes docs/benchmarks/meld.md.
/// </summary>
public static class MeldReport
{
    /// <summary>Default output, relative to the repository root.</summary>
    public const string DefaultOutput = "docs/benchmarks/meld.md";

    /// <summary>Runs the command: <c>report [--quick] [--filter TEXT] [--count N] [--out PATH]</c>.</summary>
    public static int Run(string[] args)
    {
        var quick = args.Contains("--quick");
        var output = ReportArguments.Option(args, "--out") ?? (quick ? Path.Combine(Path.GetTempPath(), "meld-quick.md") : Path.Combine(ReportArguments.RepositoryRoot(), DefaultOutput));
        var filter = ReportArguments.Option(args, "--filter");
        var workloads = (quick ? MeldSuites.Quick() : MeldSuites.All(MeldSuites.FullCount))
            .Where(w => filter is null || w.Name.Contains(filter, StringComparison.Ordinal))
            .Select(w => ReportArguments.Option(args, "--count") is { } n ? w with { Count = int.Parse(n, CultureInfo.InvariantCulture) } : w)
            .ToList();
        var repetitions = quick ? 3 : 7;
        var minimum = TimeSpan.FromMilliseconds(quick ? 20 : 60);

        var run = new MeldRun(MachineInfo.Capture(), DateTimeOffset.UtcNow, MachineInfo.LoadAverage(), quick, repetitions);
        Console.WriteLine($"meld report: {workloads.Count} configurations, {repetitions} repetitions each, load {run.LoadBefore}");
        Console.WriteLine($"  {run.Machine.Cpu}, {run.Machine.Cores} cores, {run.Machine.Runtime}");

        var clock = Stopwatch.StartNew();
        Warmup(minimum);
        Console.WriteLine($"  warmed up in {clock.Elapsed:mm\\:ss}");
        var results = new List<MeldResult>(workloads.Count);
        for (var i = 0; i < workloads.Count; i++)
        {
            var r = Measure(workloads[i], repetitions, minimum);
            results.Add(r);
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"[{i + 1,3}/{workloads.Count}] {r.Workload.Name,-26} {r.Meld.Median,12:N0} melds/s (cpu {r.Meld.CpuMedian,12:N0})  bf {r.BruteForce.Median,10:N0}/s  x{r.Speedup,4:F1}  decide x{r.DecideSpeedup,4:F1}  visited {r.Counts.NodesPerMeld,6:F1}  eph {r.Counts.EphemeralPerMeld,5:F1}  abort {r.Counts.AbortRate,6:P1}  {r.MeldBytes:F2} B/meld  ({clock.Elapsed:mm\\:ss})"));
        }

        run = run with { LoadAfter = MachineInfo.LoadAverage(), Elapsed = clock.Elapsed };
        Directory.CreateDirectory(Path.GetDirectoryName(Path.GetFullPath(output))!);
        var notes = File.Exists(output) ? MeldReportWriter.KeptNotes(File.ReadAllText(output)) : null;
        File.WriteAllText(output, MeldReportWriter.Write(run, results, notes));
        Console.WriteLine($"load after {run.LoadAfter}; wrote {output} in {clock.Elapsed:mm\\:ss}");
        return 0;
    }

    /// <summary>
    /// Runs both mixes until tiered compilation has settled, so the first configurations are not
    /// timed on unoptimized code (log generation keeps compiling new methods, which delays tier-up).
    /// </summary>
    private static void Warmup(TimeSpan minimum)
    {
        var sw = Stopwatch.StartNew();
        while (sw.Elapsed < TimeSpan.FromSeconds(3))
        {
            Measure(new MeldWorkload("warm-up", MeldMix.ReadUpdate, MeldSuites.SmallTable, 8, 16, 50, MeldSuites.QuickCount), 3, minimum);
            Measure(new MeldWorkload("warm-up", MeldMix.ReadInsert, MeldSuites.SmallTable, 8, 16, 50, MeldSuites.QuickCount), 3, minimum);
        }
    }

    private static MeldResult Measure(MeldWorkload w, int repetitions, TimeSpan minimum)
    {
        var log = MeldLogBuilder.Build(w);
        var op = new MeldOperator(threadId: 1, new NodePool(1 << 16));
        var validator = new BruteForceValidator();
        var counts = MeldCounts.Collect(log, op, validator);
        GC.Collect();
        GC.WaitForPendingFinalizers();

        int MeldPass() => MeldPasses.Meld(log, op);
        int BrutePass() => MeldPasses.BruteForce(log, validator);
        var (meld, brute) = MeldTiming.Alternating(MeldPass, BrutePass, log.Count, repetitions, minimum);
        int DecidePass() => MeldPasses.Decide(log, op);
        var (decide, bruteBeside) = MeldTiming.Alternating(DecidePass, BrutePass, log.Count, repetitions, minimum);
        var meldBytes = MeldTiming.BytesPerOperation(MeldPass, log.Count);
        var bruteBytes = MeldTiming.BytesPerOperation(BrutePass, log.Count);
        return new MeldResult(w, log.ReadShare, log.ReadOnlyDropped, counts, meld, brute, meldBytes, bruteBytes, decide, bruteBeside);
    }


}

/// <summary>When and where a report was measured.</summary>
public sealed record MeldRun(MachineInfo Machine, DateTimeOffset Started, string LoadBefore, bool Quick, int Repetitions)
{
    /// <summary>Load averages when the run finished.</summary>
    public string LoadAfter { get; init; } = "unknown";

    /// <summary>Wall-clock time of the run.</summary>
    public TimeSpan Elapsed { get; init; }
}
