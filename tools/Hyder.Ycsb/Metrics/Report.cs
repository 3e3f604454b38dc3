using System.Globalization;
using System.Text;
using System.Text.Json;
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
            rows.Add((name, "AverageLatency(us)", Real(h.Mean)));
            rows.Add((name, "MinLatency(us)", Integer(h.Min)));
            rows.Add((name, "MaxLatency(us)", Integer(h.Max)));
            foreach (var (percentile, label) in s_percentiles)
            {
                rows.Add((name, label, Integer(h.ValueAtPercentile(percentile))));
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

            if (h.ClampedCount > 0)
            {
                rows.Add((name, "Clamped", Integer(h.ClampedCount)));
            }
        }

        foreach (var cause in Enum.GetValues<AbortCause>())
        {
            if (m.AbortsOf(cause) > 0)
            {
                rows.Add(("ABORT", AbortCauses.Name(cause), Integer(m.AbortsOf(cause))));
            }
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

    /// <summary>One JSON object: settings, overall numbers, aborts by cause and one object per series.</summary>
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
            json.WriteNumber("AverageLatency(us)", Math.Round(h.Mean, 2));
            json.WriteNumber("MinLatency(us)", h.Min);
            json.WriteNumber("MaxLatency(us)", h.Max);
            foreach (var (percentile, label) in s_percentiles)
            {
                json.WriteNumber(label, h.ValueAtPercentile(percentile));
            }

            json.WriteNumber("Clamped", h.ClampedCount);
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
