using System.Globalization;

namespace Hyder.Rpc;

/// <summary>
/// The <c>grpc-timeout</c> header: <c>TimeoutValue TimeoutUnit</c>, a positive integer of at most
/// 8 digits and one of <c>H M S m u n</c> (hours, minutes, seconds, milli-, micro-, nanoseconds).
/// </summary>
internal static class GrpcTimeout
{
    private const int MaxDigits = 8;
    private const long MaxValue = 99_999_999;

    /// <summary>Parses a header value; false when it breaks the grammar.</summary>
    public static bool TryParse(ReadOnlySpan<char> text, out TimeSpan timeout)
    {
        timeout = default;
        if (text.Length < 2 || text.Length > MaxDigits + 1)
        {
            return false;
        }

        var digits = text[..^1];
        foreach (var c in digits)
        {
            if (c is < '0' or > '9')
            {
                return false;
            }
        }

        var value = long.Parse(digits, NumberStyles.None, CultureInfo.InvariantCulture);
        long? ticks = text[^1] switch
        {
            'H' => value * TimeSpan.TicksPerHour,
            'M' => value * TimeSpan.TicksPerMinute,
            'S' => value * TimeSpan.TicksPerSecond,
            'm' => value * TimeSpan.TicksPerMillisecond,
            'u' => value * TimeSpan.TicksPerMicrosecond,
            'n' => (value + 99) / 100, // a tick is 100 ns; round up so a timeout never shrinks to 0
            _ => null,
        };
        if (ticks is null)
        {
            return false;
        }

        timeout = TimeSpan.FromTicks(ticks.Value);
        return true;
    }

    /// <summary>
    /// Formats a timeout in the finest unit whose value fits in 8 digits, rounding up; a timeout
    /// that has already run out is sent as <c>1n</c>.
    /// </summary>
    public static string Format(TimeSpan timeout)
    {
        var ticks = timeout.Ticks;
        if (ticks <= 0)
        {
            return "1n";
        }

        if (ticks <= MaxValue / 100)
        {
            return Text(ticks * 100, 'n');
        }

        ReadOnlySpan<(long Ticks, char Unit)> units =
        [
            (TimeSpan.TicksPerMicrosecond, 'u'),
            (TimeSpan.TicksPerMillisecond, 'm'),
            (TimeSpan.TicksPerSecond, 'S'),
            (TimeSpan.TicksPerMinute, 'M'),
        ];
        foreach (var (unitTicks, unit) in units)
        {
            var value = (ticks + unitTicks - 1) / unitTicks;
            if (value <= MaxValue)
            {
                return Text(value, unit);
            }
        }

        return Text(Math.Min(MaxValue, (ticks + TimeSpan.TicksPerHour - 1) / TimeSpan.TicksPerHour), 'H');
    }

    private static string Text(long value, char unit) =>
        string.Create(CultureInfo.InvariantCulture, $"{value}{unit}");
}
