using System.Globalization;
using System.Text;
using System.Text.Json;
using HdrHistogram;
using Hyder.Ycsb.Driver;

namespace Hyder.Ycsb.Metrics;

/// <summary>
/// The final report of a phase as (section, metric, value) rows in YCSB's order and spelling
/// (<c>[OVERALL], RunTime(ms), …</c>, then one block per series), plus the transaction outcomes.
/// The text, CSV and JSON outputs are renderings of the same rows.
/// </summary>
internal sealed class Report
{
    /// <summary>Percentiles in every series block, with YCSB's labels.</summary>
    private static readonly (double Percentile, string Label)[] s_percentiles =
    [
        (50, "50thPercentileLatency(us)"),
        (95, "95thPercentileLatency(us)"),
        (99, "99thPercentileLatency(us)"),
        (99.9, "99.9PercentileLatency(us)"),
    ];

    /// <summary>The section of the target's own figures (the Hyder targets' meld counters).</summary>
    public const string TargetSection = "HYDER";

    private Report(PhaseResult result, IReadOnlyList<(string Section, string Metric, string Value)> rows)
    {
        Result = result;
        Rows = rows;
    }

    public PhaseResult Result { get; }

    public IReadOnlyList<(string Section, string Metric, string Value)> Rows { get; }

    public static Report Build(PhaseResult result)
    {
        var rows = new List<(string, string, string)>();
        var m = result.Totals;
        var seconds = Math.Max(result.RunTime.TotalSeconds, 1e-9);
        long operations = 0;
        for (var s = Series.Read; s <= Series.Add; s++)
        {
            operations += m[s].TotalCount;
        }

        void Overall(string metric, string value) => rows.Add(("OVERALL", metric, value));
        Overall("RunTime(ms)", Integer((long)result.RunTime.TotalMilliseconds));
        Overall("Throughput(ops/sec)", Real(operations / seconds));
        Overall("Committed", Integer(m.Committed));
        Overall("Aborted", Integer(m.Aborted));
        Overall("GaveUp", Integer(m.GaveUp));
        if (m.BoundRejected > 0)
        {
            Overall("BoundRejected", Integer(m.BoundRejected));
        }

        Overall("Committed(tx/sec)", Real(m.Committed / seconds));
        Overall("AbortRate(%)", Real(m.Committed + m.Aborted == 0 ? 0 : 100.0 * m.Aborted / (m.Committed + m.Aborted)));

        foreach (var series in Enum.GetValues<Series>())
        {
            var h = m[series];
            if (h.TotalCount == 0)
            {
                continue;
            }

            var name = SeriesNames.ReportName(series);
            rows.Add((name, "Operations", Integer(h.TotalCount)));
            rows.Add((name, "AverageLatency(us)", Real(h.GetMean())));
            rows.Add((name, "MinLatency(us)", Integer(h.GetValueAtPercentile(0))));
            rows.Add((name, "MaxLatency(us)", Integer(h.GetMaxValue())));
            foreach (var (percentile, label) in s_percentiles)
            {
                rows.Add((name, label, Integer(h.GetValueAtPercentile(percentile))));
            }

            if (series == Series.Read && m.NotFound > 0)
            {
                rows.Add((name, "Return=OK", Integer(h.TotalCount - m.NotFound)));
                rows.Add((name, "Return=NOT_FOUND", Integer(m.NotFound)));
            }
            else if (series <= Series.Add)
            {
                rows.Add((name, "Return=OK", Integer(h.TotalCount)));
            }

            if (m.ClampedOf(series) > 0)
            {
                rows.Add((name, "Clamped", Integer(m.ClampedOf(series))));
            }
        }

        foreach (var cause in Enum.GetValues<AbortCause>())
        {
            if (m.AbortsOf(cause) > 0)
            {
                rows.Add(("ABORT", AbortCauses.Name(cause), Integer(m.AbortsOf(cause))));
            }
        }

        if (m.InconsistentReads > 0)
        {
            rows.Add(("READ", "InconsistentCounterValues", Integer(m.InconsistentReads)));
        }

        foreach (var (metric, value) in result.Target)
        {
            rows.Add((TargetSection, metric, Real(value)));
        }

        return new Report(result, rows);
    }

    /// <summary>YCSB's text format: <c>[SECTION], metric, value</c> per line.</summary>
    public void WriteText(TextWriter writer)
    {
        foreach (var (section, metric, value) in Rows)
        {
            writer.WriteLine($"[{section}], {metric}, {value}");
        }
    }

    /// <summary>A few lines for people after the YCSB rows: the rate, the aborts by cause, latencies, the target's figures.</summary>
    public void WriteSummary(TextWriter writer)
    {
        var m = Result.Totals;
        var seconds = Math.Max(Result.RunTime.TotalSeconds, 1e-9);
        var attempts = m.Committed + m.Aborted;
        var causes = string.Join(", ", Enum.GetValues<AbortCause>().Where(c => m.AbortsOf(c) > 0).Select(c => $"{AbortCauses.Name(c)} {m.AbortsOf(c):N0}"));
        var tx = m[Series.Transaction];
        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"# Summary: {m.Committed / seconds:N0} committed transactions/s over {seconds:0.0} s: {m.Committed:N0} committed, {m.Aborted:N0} attempts aborted ({(attempts == 0 ? 0 : 100.0 * m.Aborted / attempts):0.00} %{(causes.Length > 0 ? ": " + causes : "")}), {m.GaveUp:N0} given up"));
        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"#   transaction latency (retries included): p50 {Percentiles.Milliseconds(tx, 50)}, p95 {Percentiles.Milliseconds(tx, 95)}, p99 {Percentiles.Milliseconds(tx, 99)}, p99.9 {Percentiles.Milliseconds(tx, 99.9)}"));
        if (m.BoundRejected > 0)
        {
            writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"#   turned down by a bound (out of stock or full; not retried, not counted as aborts): {m.BoundRejected:N0} ({100.0 * m.BoundRejected / Math.Max(1, m.Committed + m.BoundRejected):0.0} % of completed transactions)"));
        }

        if (m.InconsistentReads > 0)
        {
            writer.WriteLine($"#   INCONSISTENT: {m.InconsistentReads:N0} counter reads returned values the issued increments cannot produce");
        }

        var target = Result.Target.ToDictionary(r => r.Metric, r => r.Value, StringComparer.Ordinal);
        if (target.TryGetValue("FinalMeldNodes/Intention", out var nodes) && target.TryGetValue("Servers", out var servers))
        {
            var agree = target.TryGetValue("StateHashesAgree", out var a) && a == 1;
            writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"#   Hyder: {servers:0} server{(servers == 1 ? "" : "s")}; final meld visited {nodes:0.0} nodes per intention; mean conflict zone {target.GetValueOrDefault("ConflictZone"):0.0} intentions; {(agree ? "every server holds the same state hash" : "THE SERVERS' STATE HASHES DIFFER")}"));
        }
    }

    /// <summary>CSV with a header: <c>phase,section,metric,value</c>, one row per report line.</summary>
    public void WriteCsv(TextWriter writer, bool header)
    {
        if (header)
        {
            writer.WriteLine("phase,section,metric,value");
        }

        foreach (var (section, metric, value) in Rows)
        {
            writer.WriteLine($"{Result.Phase},{Quote(section)},{Quote(metric)},{value}");
        }
    }

    /// <summary>One JSON object: settings, overall numbers, the target's figures, aborts by cause and one object per series.</summary>
    public void WriteJson(Utf8JsonWriter json, IReadOnlyDictionary<string, string> settings)
    {
        var m = Result.Totals;
        json.WriteStartObject();
        json.WriteString("phase", Result.Phase);
        json.WriteStartObject("settings");
        foreach (var (key, value) in settings)
        {
            json.WriteString(key, value);
        }

        json.WriteEndObject();
        json.WriteStartObject("overall");
        foreach (var (section, metric, value) in Rows)
        {
            if (section == "OVERALL")
            {
                json.WriteNumber(metric, double.Parse(value, CultureInfo.InvariantCulture));
            }
        }

        json.WriteNumber("NotFound", m.NotFound);
        json.WriteNumber("InconsistentReads", m.InconsistentReads);
        json.WriteNumber("BoundRejected", m.BoundRejected);
        json.WriteEndObject();
        json.WriteStartObject("target");
        foreach (var (metric, value) in Result.Target)
        {
            json.WriteNumber(metric, Math.Round(value, 2));
        }

        json.WriteEndObject();
        json.WriteStartObject("aborts");
        foreach (var cause in Enum.GetValues<AbortCause>())
        {
            json.WriteNumber(AbortCauses.Name(cause), m.AbortsOf(cause));
        }

        json.WriteEndObject();
        json.WriteStartObject("series");
        foreach (var series in Enum.GetValues<Series>())
        {
            var h = m[series];
            if (h.TotalCount == 0)
            {
                continue;
            }

            json.WriteStartObject(SeriesNames.ReportName(series));
            json.WriteNumber("Operations", h.TotalCount);
            json.WriteNumber("AverageLatency(us)", Math.Round(h.GetMean(), 2));
            json.WriteNumber("MinLatency(us)", h.GetValueAtPercentile(0));
            json.WriteNumber("MaxLatency(us)", h.GetMaxValue());
            foreach (var (percentile, label) in s_percentiles)
            {
                json.WriteNumber(label, h.GetValueAtPercentile(percentile));
            }

            json.WriteNumber("Clamped", m.ClampedOf(series));
            json.WriteEndObject();
        }

        json.WriteEndObject();
        json.WriteEndObject();
    }

    private static string Integer(long value) => value.ToString(CultureInfo.InvariantCulture);

    private static string Real(double value) => Math.Round(value, 2).ToString("0.##", CultureInfo.InvariantCulture);

    private static string Quote(string text)
    {
        if (text.AsSpan().IndexOfAny(",\"\n") < 0)
        {
            return text;
        }

        var builder = new StringBuilder(text.Length + 2).Append('"');
        builder.Append(text.Replace("\"", "\"\"", StringComparison.Ordinal));
        return builder.Append('"').ToString();
    }
}
