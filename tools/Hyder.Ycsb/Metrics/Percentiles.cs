using System.Globalization;
using HdrHistogram;

namespace Hyder.Ycsb.Metrics;

/// <summary>
/// Latency percentiles for status lines and summaries. HdrHistogram throws for a percentile of an
/// empty histogram, and an interval (or a whole run) in which no transaction finished has one: such
/// a figure is printed as "-".
/// </summary>
internal static class Percentiles
{
    /// <summary>The value at <paramref name="percentile"/> in milliseconds with its unit ("7.21 ms"), or "-" when nothing was recorded.</summary>
    public static string Milliseconds(HistogramBase histogram, double percentile) =>
        histogram.TotalCount == 0
            ? "-"
            : string.Create(CultureInfo.InvariantCulture, $"{histogram.GetValueAtPercentile(percentile) / 1000.0:0.00} ms");
}
