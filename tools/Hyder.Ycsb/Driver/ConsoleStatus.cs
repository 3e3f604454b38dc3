using System.Globalization;
using Hyder.Ycsb.Metrics;

namespace Hyder.Ycsb.Driver;

/// <summary>
/// Status lines of the run phase on standard error, every interval:
/// <c>[STATUS] 12 s: 1234.5 committed/s, aborts/s serialization 3.5 deadlock 0, p50 1.21 ms, p99 4.87 ms, in-flight 16</c>.
/// </summary>
internal sealed class RunStatus(TextWriter writer) : IStatusSink
{
    public void Status(StatusSnapshot s)
    {
        var seconds = Math.Max(s.Interval.TotalSeconds, 1e-9);
        var m = s.IntervalMeasurements;
        var line = string.Create(CultureInfo.InvariantCulture,
            $"[STATUS] {s.Elapsed.TotalSeconds:0.0} s{(s.WarmingUp ? " (warm-up)" : "")}: {m.Committed / seconds:0.0} committed/s, aborts/s");
        var aborts = m.Aborted == 0 ? [" none"] : Enum.GetValues<AbortCause>().Where(c => m.AbortsOf(c) > 0).Select(c =>
            string.Create(CultureInfo.InvariantCulture, $" {AbortCauses.Name(c)} {m.AbortsOf(c) / seconds:0.0}"));
        var tx = m[Series.Transaction];
        writer.WriteLine(line + string.Concat(aborts) + string.Create(CultureInfo.InvariantCulture,
            $", p50 {Percentiles.Milliseconds(tx, 50)}, p99 {Percentiles.Milliseconds(tx, 99)}, in-flight {s.InFlight}"));
    }

    public void Finished(PhaseResult result)
    {
    }
}

/// <summary>
/// Progress of the load phase on standard error: a bar redrawn in place on a terminal, a plain
/// line per interval otherwise (a log or CI keeps every line).
/// </summary>
internal sealed class LoadProgress(TextWriter writer, long totalRecords, bool terminal) : IStatusSink
{
    private const int BarWidth = 30;
    private long _lastRecords;

    public void Status(StatusSnapshot s)
    {
        var records = s.CommittedOperations;
        var rate = (records - _lastRecords) / Math.Max(s.Interval.TotalSeconds, 1e-9);
        _lastRecords = records;
        var fraction = totalRecords == 0 ? 1 : Math.Min(1.0, (double)records / totalRecords);
        if (terminal)
        {
            var filled = (int)(fraction * BarWidth);
            writer.Write(string.Create(CultureInfo.InvariantCulture,
                $"\r[{new string('#', filled)}{new string('.', BarWidth - filled)}] {fraction,4:P0} {records:N0}/{totalRecords:N0} records, {rate:N0} records/s   "));
        }
        else
        {
            writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"[LOAD] {s.Elapsed.TotalSeconds:0} s: {fraction:P0} {records}/{totalRecords} records, {rate:0} records/s"));
        }
    }

    public void Finished(PhaseResult result)
    {
        if (terminal)
        {
            writer.WriteLine();
        }

        writer.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"[LOAD] done: {result.CommittedOperations} records in {result.RunTime.TotalSeconds:0.0} s"));
    }
}
