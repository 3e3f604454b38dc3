using System.Diagnostics;
using Hyder.Testing;
using Xunit;

namespace Hyder.Ycsb.Tests;

/// <summary>
/// benchmarks/report/render.py on Fixtures/report: run files shaped as <c>run --json</c> writes them,
/// with the embedded target's <c>settings.pipeline</c> and <c>target</c> object, rows that lack some of
/// those keys, PostgreSQL rows and a failed run. They run Debian's /usr/bin/python3 (HYDER_PYTHON
/// overrides; <c>tools/test.sh</c> installs it) and fail, not skip, without it.
/// </summary>
public sealed class ReportRendererTests : IDisposable
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(120);
    private readonly string _scratch = Path.Combine(Path.GetTempPath(), $"hyder-render-test-{Guid.NewGuid():N}");

    public ReportRendererTests() => Directory.CreateDirectory(_scratch);

    private static string Fixtures => Path.Combine(AppContext.BaseDirectory, "Fixtures", "report");

    private string Out => Path.Combine(_scratch, "out");

    public void Dispose() => Directory.Delete(_scratch, recursive: true);

    [Fact]
    public void TheReportHasEveryTableWithTheRunsNumbers()
    {
        var (code, output, error) = Render(Fixtures, "--out", Out, "--no-charts");
        Assert.True(code == 0, error);
        Assert.Contains("wrote", output, StringComparison.Ordinal);
        var report = File.ReadAllText(Path.Combine(Out, "ycsb.md"));

        // The machine, the date, the commit and the command, from the manifest.
        Assert.Contains("- Date: 2026-11-21 17:00 UTC, commit `abc1234`", report, StringComparison.Ordinal);
        Assert.Contains("- Machine: Fixture CPU, 2 cores, 23.5 GiB RAM; Debian GNU/Linux 12 (bookworm), Linux kernel 6.1.0-fixture; .NET 10.0.12", report, StringComparison.Ordinal);
        Assert.Contains("before: 0.50 0.40 0.30; after: 1.50 1.40 1.30", report, StringComparison.Ordinal);
        Assert.Contains("- Command: `bash benchmarks/report.sh`", report, StringComparison.Ordinal);
        Assert.Contains("threads: 2; in flight per thread: 16", report, StringComparison.Ordinal);
        foreach (var section in new[] { "## How to read this", "## Meld pipeline settings", "## Serializable vs snapshot isolation", "## Key skew", "## Side by side with PostgreSQL", "## Runs" })
        {
            Assert.Contains(section, report, StringComparison.Ordinal);
        }

        // Committed tx/s, aborts, p50/p99 in ms, then nodes per intention by stage, conflict zone, hashes.
        Assert.Contains("| setting | pipeline (from the run) | committed tx/s | aborts (% of attempts) | transaction p50 ms | transaction p99 ms | final meld nodes / intention | premeld nodes / intention | group meld nodes / intention | conflict zone (mean) | final meld's conflict zone (mean) | state hashes agree | run |", report, StringComparison.Ordinal);
        Assert.Contains("| final meld only | final meld only | 6,733 | 0.21 % | 18.95 | 61.23 | 131.8 | 0.0 | 0.0 | 83.3 | 83.3 | yes | [pipeline-final.json]", report, StringComparison.Ordinal);
        Assert.Contains("| premeld t=2 d=2 + group meld | premeld t=2 d=2 + group meld | 3,852 | 0.30 % | 33.10 | 88.01 | 55.7 | 138.4 | 101.8 | 118.0 | 5.0 | yes |", report, StringComparison.Ordinal);

        // Keys a run does not report are dashes; the shared baseline run appears in each sweep.
        Assert.Contains("| snapshot | final meld only | 11,957 | 0.01 % | 10.70 | 40.10 | 35.1 | – | – | – | – | yes |", report, StringComparison.Ordinal);
        Assert.Contains("| serializable | final meld only | 6,733 | 0.21 % |", report, StringComparison.Ordinal);
        Assert.Contains("| hotspot x=0.2 | 5,210 | 4.75 % | 21.00 | 90.40 | 12 | [skew-hotspot.json]", report, StringComparison.Ordinal);

        // A failed run is a row that says so, with the tool's message.
        Assert.Contains("| zipfian 0.99 | failed (exit 2) | – | – | – | – | `skew-zipfian.json` (no file) |", report, StringComparison.Ordinal);
        Assert.Contains("- `skew-zipfian.json` failed with exit code 2: error: --target embedded is not yet available", report, StringComparison.Ordinal);

        // PostgreSQL beside Hyder, grouped by workload, with no target counters.
        Assert.Contains("| tx 8+2 | PostgreSQL, SERIALIZABLE | PostgreSQL | – | 561 | 0.20 % | 23.10 | 120.3 | – | – | – | – | – | – |", report, StringComparison.Ordinal);
        Assert.Contains("| YCSB A | Hyder, serializable | Hyder | final meld only | 14,211 | 1.10 % | 2.10 | 9.80 | 20.5 | 0.0 | 0.0 | 40.2 | 40.2 | yes |", report, StringComparison.Ordinal);

        // Every number of the target object, including one the renderer does not know.
        Assert.Contains("| isolation-snapshot.json | 1 | 239,144 | – | – | – | – | – | 35.1 | – | – | – | yes | 3 |", report, StringComparison.Ordinal);
        Assert.Contains("| pipeline-final.json | 1 | 134,668 | 134,385 | 283 | 0 | 83.3 | 83.3 | 131.8 | 0.0 | 0.0 | 84.3 KiB | yes | – |", report, StringComparison.Ordinal);

        Assert.Contains("charts were not drawn (`--no-charts`)", report, StringComparison.Ordinal);
        Assert.DoesNotContain("![", report, StringComparison.Ordinal);
        Assert.False(Directory.Exists(Path.Combine(Out, "ycsb")), "--no-charts drew charts");
    }

    [Fact]
    public void WithoutGnuplotTheReportHasItsTablesAndSaysTheChartsAreMissing()
    {
        var (code, output, error) = Render(Fixtures, ["--out", Out], path: Path.Combine(_scratch, "no-such-folder"));
        Assert.True(code == 0, error);
        Assert.Contains("gnuplot is not installed", output, StringComparison.Ordinal);
        var report = File.ReadAllText(Path.Combine(Out, "ycsb.md"));
        Assert.Contains("charts were not drawn: gnuplot is not installed", report, StringComparison.Ordinal);
        Assert.Contains("| group meld | group meld | 7,517 | 0.42 % | 17.01 | 55.12 | 121.4 | 0.0 | 102.3 | 96.6 | 96.6 | yes |", report, StringComparison.Ordinal);
        Assert.DoesNotContain("![", report, StringComparison.Ordinal);
    }

    [Fact]
    public void WithGnuplotEverySweepGetsAThroughputChartAndTheHyderSweepsANodesChart()
    {
        var gnuplot = (Environment.GetEnvironmentVariable("PATH") ?? "").Split(':').Select(d => Path.Combine(d, "gnuplot")).FirstOrDefault(File.Exists);
        var (code, output, error) = Render(Fixtures, "--out", Out);
        Assert.True(code == 0, error);
        var report = File.ReadAllText(Path.Combine(Out, "ycsb.md"));
        if (gnuplot is null)
        {
            // CI does not install gnuplot-nox: then the report must say why it has no charts.
            Assert.Contains("gnuplot is not installed", report, StringComparison.Ordinal);
            return;
        }

        Assert.Contains("7 charts", output, StringComparison.Ordinal);
        foreach (var chart in new[] { "pipeline-throughput", "pipeline-nodes", "isolation-throughput", "isolation-nodes", "skew-throughput", "postgres-throughput", "postgres-nodes" })
        {
            Assert.Contains($"(ycsb/{chart}.png)", report, StringComparison.Ordinal);
            var png = File.ReadAllBytes(Path.Combine(Out, "ycsb", chart + ".png"));
            Assert.Equal(new byte[] { 0x89, (byte)'P', (byte)'N', (byte)'G' }, png[..4]);
        }

        Assert.False(File.Exists(Path.Combine(Out, "ycsb", "skew-nodes.png")), "a nodes chart for runs without nodes");
    }

    [Theory]
    [InlineData("[{\"phase\": \"run\", \"overall\": {", "pipeline-group.json: not valid JSON: Expecting property name enclosed in double quotes (line 1, column 31)")]
    [InlineData("{\"phase\": \"run\"}", "pipeline-group.json: expected the array of phases that `Hyder.Ycsb run --json` writes, found a JSON dict")]
    [InlineData("[{\"phase\": \"load\", \"overall\": {}}]", "pipeline-group.json: no phase object with \"phase\": \"run\"")]
    [InlineData("[{\"phase\": \"run\", \"overall\": {}, \"target\": [1]}]", "pipeline-group.json: \"target\" of the run phase is not an object")]
    public void ABadRunFileFailsWithItsNameAndWhatIsWrong(string content, string message)
    {
        var runs = CopyFixtures();
        File.WriteAllText(Path.Combine(runs, "pipeline-group.json"), content);
        var (code, _, error) = Render(runs, "--out", Out, "--no-charts");
        Assert.Equal(2, code);
        Assert.Contains("render.py: error: ", error, StringComparison.Ordinal);
        Assert.Contains(message, error, StringComparison.Ordinal);
        Assert.False(File.Exists(Path.Combine(Out, "ycsb.md")), "a report from bad input");
    }

    [Fact]
    public void AMissingManifestFailsWithWhatWritesIt()
    {
        var runs = CopyFixtures();
        File.Delete(Path.Combine(runs, "manifest.json"));
        var (code, _, error) = Render(runs, "--no-charts");
        Assert.Equal(2, code);
        Assert.Contains("manifest.json: missing (benchmarks/report.sh writes it with manifest.py)", error, StringComparison.Ordinal);
    }

    private string CopyFixtures()
    {
        var runs = Path.Combine(_scratch, "runs");
        Directory.CreateDirectory(runs);
        foreach (var file in Directory.GetFiles(Fixtures))
        {
            File.Copy(file, Path.Combine(runs, Path.GetFileName(file)));
        }

        return runs;
    }

    private static (int Code, string Output, string Error) Render(string runs, params string[] arguments) => Render(runs, arguments, path: null);

    /// <summary>Runs render.py; <paramref name="path"/> replaces PATH (to hide gnuplot).</summary>
    private static (int Code, string Output, string Error) Render(string runs, string[] arguments, string? path)
    {
        var interpreter = Environment.GetEnvironmentVariable("HYDER_PYTHON") is { Length: > 0 } custom ? custom : "/usr/bin/python3";
        if (!File.Exists(interpreter))
        {
            throw MissingPackageException.For($"{interpreter} (for the report renderer; HYDER_PYTHON names another) is missing", "python3");
        }

        var info = new ProcessStartInfo(interpreter)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        info.ArgumentList.Add(Path.Combine(AppContext.BaseDirectory, "Report", "render.py"));
        info.ArgumentList.Add(runs);
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        if (path is not null)
        {
            info.Environment["PATH"] = path;
        }

        using var process = Process.Start(info)!;
        var output = process.StandardOutput.ReadToEndAsync();
        var error = process.StandardError.ReadToEndAsync();
        if (!process.WaitForExit(s_timeout))
        {
            process.Kill(entireProcessTree: true);
            Assert.Fail($"render.py did not finish within {s_timeout.TotalSeconds} s");
        }

        return (process.ExitCode, output.Result, error.Result);
    }
}
