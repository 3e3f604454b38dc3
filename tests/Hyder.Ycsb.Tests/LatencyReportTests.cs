using System.Globalization;
using System.Text.Json;
using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Generators;
using Hyder.Ycsb.Metrics;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Ycsb.Tests;

/// <summary>
/// Latencies from the workers' recorders through the merged <see cref="Measurements"/> (HdrHistogram
/// underneath) to YCSB's report rows and the JSON report: what the report says matches the samples.
/// </summary>
public class LatencyReportTests(ITestOutputHelper output)
{
    /// <summary>3 significant digits: a reported latency is within 0.1 % of the exact one.</summary>
    private const double RelativeBound = 0.001;

    private static readonly (double Percentile, string Label)[] s_rows =
    [
        (50, "50thPercentileLatency(us)"),
        (95, "95thPercentileLatency(us)"),
        (99, "99thPercentileLatency(us)"),
        (99.9, "99.9PercentileLatency(us)"),
    ];

    [Theory]
    [InlineData("uniform", 1)]
    [InlineData("exponential", 2)]
    [InlineData("lognormal", 3)]
    [InlineData("bimodal", 4)]
    [InlineData("pareto", 5)]
    public void TheReportsPercentilesMinMaxAndMeanAreWithinThreeSignificantDigitsOfTheSamples(string shape, ulong seed)
    {
        var rng = new Rng(seed);
        var samples = new long[200_000];
        var recorders = Enumerable.Range(0, 4).Select(_ => new MeasurementRecorder()).ToArray();
        for (var i = 0; i < samples.Length; i++)
        {
            samples[i] = Sample(shape, ref rng);
            recorders[i % recorders.Length].Record(Series.Read, samples[i]);
        }

        var totals = new Measurements();
        foreach (var r in recorders)
        {
            r.CollectInto(totals);
        }

        var rows = ReadRows(Report.Build(new PhaseResult("run", totals, TimeSpan.FromSeconds(1), 0)));
        Array.Sort(samples);
        var worst = 0.0;
        void Near(string metric, double exact, double lowerExact)
        {
            var reported = double.Parse(rows[metric], CultureInfo.InvariantCulture);
            var error = reported >= lowerExact && reported <= exact ? 0 : Math.Min(Math.Abs(reported - exact), Math.Abs(reported - lowerExact)) / Math.Max(lowerExact, 1);
            Assert.True(error <= RelativeBound || Math.Abs(reported - exact) <= 1, $"{shape} {metric}: reported {reported}, exact {lowerExact}..{exact}, error {error:P4}");
            worst = Math.Max(worst, error);
        }

        Assert.Equal(samples.Length.ToString(CultureInfo.InvariantCulture), rows["Operations"]);
        foreach (var (percentile, label) in s_rows)
        {
            // HdrHistogram computes the rank p/100 · count in floating point, which can land one
            // sample lower (0.999 · 200,000 is 199,799.99…): the sample below counts as exact too.
            var rank = Rank(samples.Length, percentile);
            Near(label, samples[rank - 1], samples[Math.Max(rank - 2, 0)]);
        }

        Near("MinLatency(us)", samples[0], samples[0]);
        Near("MaxLatency(us)", samples[^1], samples[^1]);
        Near("AverageLatency(us)", samples.Average(), samples.Average());
        Assert.False(rows.ContainsKey("Clamped"));
        output.WriteLine($"{shape}: worst relative error {worst:P4} over the report's latency rows of {samples.Length} samples");
    }

    [Fact]
    public void OutOfRangeLatenciesAreRecordedAtTheEdgesAndCountedAsClamped()
    {
        var m = new Measurements();
        m.Record(Series.Update, 0);
        m.Record(Series.Update, long.MaxValue);
        m.Record(Series.Update, -5);
        m.Record(Series.Update, Measurements.HighestTrackableLatency);
        Assert.Equal(4, m[Series.Update].TotalCount);
        Assert.Equal(2, m.ClampedOf(Series.Update));
        Assert.Equal(0, m[Series.Update].GetValueAtPercentile(50));
        Assert.True(m[Series.Update].GetValueAtPercentile(100) >= Measurements.HighestTrackableLatency);

        var rows = ReadRows(Report.Build(new PhaseResult("run", m, TimeSpan.FromSeconds(1), 0)), "UPDATE");
        Assert.Equal("2", rows["Clamped"]);
        Assert.Equal("0", rows["MinLatency(us)"]);

        var merged = new Measurements();
        merged.Add(m);
        merged.Add(m);
        Assert.Equal(4, merged.ClampedOf(Series.Update));
        merged.Reset();
        Assert.Equal(0, merged.ClampedOf(Series.Update));
        Assert.Equal(0, merged[Series.Update].TotalCount);
    }

    [Fact]
    public void TheJsonReportCarriesTheSameLatencyRowsAsTheText()
    {
        var m = new Measurements();
        var rng = new Rng(11);
        for (var i = 0; i < 10_000; i++)
        {
            m.Record(Series.Transaction, Sample("lognormal", ref rng));
        }

        m.CountCommit();
        var report = Report.Build(new PhaseResult("run", m, TimeSpan.FromSeconds(1), 0));
        var rows = ReadRows(report, "TRANSACTION");
        using var stream = new MemoryStream();
        using (var json = new Utf8JsonWriter(stream))
        {
            report.WriteJson(json, new Dictionary<string, string>());
        }

        using var document = JsonDocument.Parse(stream.ToArray());
        var series = document.RootElement.GetProperty("series").GetProperty("TRANSACTION");
        foreach (var metric in new[] { "Operations", "MinLatency(us)", "MaxLatency(us)" }.Concat(s_rows.Select(r => r.Label)))
        {
            Assert.Equal(rows[metric], series.GetProperty(metric).GetInt64().ToString(CultureInfo.InvariantCulture));
        }

        Assert.Equal(0, series.GetProperty("Clamped").GetInt64());
    }

    [Fact]
    public async Task RecordersOnManyThreadsLoseNoSampleWhileACollectorRuns()
    {
        var recorders = Enumerable.Range(0, 4).Select(_ => new MeasurementRecorder()).ToArray();
        var total = new Measurements();
        using var barrier = new Barrier(recorders.Length + 1);
        var writers = recorders.Select((r, t) => Task.Factory.StartNew(() =>
        {
            barrier.SignalAndWait();
            for (var i = 0; i < 50_000; i++)
            {
                r.Record(Series.Read, i % 1000);
            }
        }, TaskCreationOptions.LongRunning)).ToArray();
        barrier.SignalAndWait();
        var all = Task.WhenAll(writers);
        while (!all.IsCompleted)
        {
            await Task.Yield();
            foreach (var r in recorders)
            {
                r.CollectInto(total);
            }
        }

        await all;
        foreach (var r in recorders)
        {
            r.CollectInto(total);
        }

        Assert.Equal(4 * 50_000, total[Series.Read].TotalCount);
        Assert.Equal(200, total[Series.Read].GetCountAtValue(999));
    }

    [Fact]
    public void RecordingAllocatesNothing()
    {
        var m = new Measurements();
        m.Record(Series.Read, 1);
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 10_000; i++)
        {
            m.Record(Series.Read, i * 7919L);
        }

        Assert.Equal(0, GC.GetAllocatedBytesForCurrentThread() - before);
    }

    /// <summary>The report's rows of one section, by metric.</summary>
    private static Dictionary<string, string> ReadRows(Report report, string section = "READ") =>
        report.Rows.Where(r => r.Section == section).ToDictionary(r => r.Metric, r => r.Value);

    /// <summary>The nearest rank of <paramref name="percentile"/> among <paramref name="count"/> sorted samples (1-based).</summary>
    private static int Rank(int count, double percentile) => Math.Max(1, (int)Math.Ceiling(Math.Round(percentile / 100 * count, 6)));

    private static long Sample(string shape, ref Rng rng)
    {
        var u = rng.NextDouble();
        return shape switch
        {
            "uniform" => rng.NextInt64(10_000_000),
            "exponential" => (long)(-Math.Log(1 - u) * 2_000),
            "lognormal" => (long)Math.Exp(7 + (2 * Normal(ref rng))),
            "bimodal" => u < 0.9 ? 200 + rng.NextInt64(100) : 50_000 + rng.NextInt64(5_000_000),
            "pareto" => Math.Min((long)(100 / Math.Pow(1 - u, 1 / 1.2)), 3_000_000_000),
            _ => throw new ArgumentOutOfRangeException(nameof(shape)),
        };
    }

    private static double Normal(ref Rng rng) =>
        Math.Sqrt(-2 * Math.Log(1 - rng.NextDouble())) * Math.Cos(2 * Math.PI * rng.NextDouble());

    /// <summary>
    /// HdrHistogram throws for a percentile of an empty histogram. A status interval in which no
    /// transaction finished (a short one at the end of the warm-up, a stalled server) and a run in
    /// which none did print "-" instead of ending the run.
    /// </summary>
    [Fact]
    public void AStatusLineAndASummaryWithNoFinishedTransactionPrintADash()
    {
        var empty = new Measurements();
        var status = new StringWriter();
        new RunStatus(status).Status(new StatusSnapshot(TimeSpan.FromSeconds(5), TimeSpan.FromMilliseconds(1), empty, 64, WarmingUp: true, 0));
        Assert.Contains("p50 -, p99 -, in-flight 64", status.ToString(), StringComparison.Ordinal);

        var summary = new StringWriter();
        Report.Build(new PhaseResult("run", empty, TimeSpan.FromSeconds(10), 0)).WriteSummary(summary);
        Assert.Contains("p50 -, p95 -, p99 -, p99.9 -", summary.ToString(), StringComparison.Ordinal);

        // With a transaction recorded, the figures are there.
        empty.Record(Series.Transaction, 7_210);
        status.GetStringBuilder().Clear();
        new RunStatus(status).Status(new StatusSnapshot(TimeSpan.FromSeconds(6), TimeSpan.FromSeconds(1), empty, 64, WarmingUp: false, 1));
        Assert.Contains("p50 7.21 ms, p99 7.21 ms", status.ToString(), StringComparison.Ordinal);
    }
}

