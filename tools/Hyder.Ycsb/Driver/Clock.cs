using System.Diagnostics;

namespace Hyder.Ycsb.Driver;

/// <summary>Monotonic time in microseconds, from <see cref="Stopwatch"/>.</summary>
internal static class Clock
{
    private static readonly double s_ticksPerMicrosecond = Stopwatch.Frequency / 1_000_000.0;

    public static long Now => Stopwatch.GetTimestamp();

    public static long Microseconds(long fromTimestamp, long toTimestamp) => (long)((toTimestamp - fromTimestamp) / s_ticksPerMicrosecond);

    public static long MicrosecondsSince(long timestamp) => Microseconds(timestamp, Stopwatch.GetTimestamp());
}
