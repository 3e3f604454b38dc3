using System.Runtime.InteropServices;

namespace Hyder.Log.Storage;

/// <summary>
/// A sleep shorter than a millisecond, for group commit's delay (<see cref="GroupCommitDelay"/>):
/// .NET's sleeps and timers count whole milliseconds, so on Unix this calls nanosleep(2), which
/// wakes within the kernel's timer slack (50 µs by default). Elsewhere it sleeps whole
/// milliseconds, rounded up.
/// </summary>
internal static partial class PreciseSleep
{
    /// <summary>Sleeps about <paramref name="duration"/>; returns early only if a signal interrupts it.</summary>
    public static void For(TimeSpan duration)
    {
        if (duration <= TimeSpan.Zero)
        {
            return;
        }

        if (OperatingSystem.IsWindows())
        {
            Thread.Sleep((int)Math.Ceiling(duration.TotalMilliseconds));
            return;
        }

        var nanoseconds = duration.Ticks * 100;
        var request = new Timespec { Seconds = nanoseconds / 1_000_000_000, Nanoseconds = nanoseconds % 1_000_000_000 };
        _ = NanoSleep(in request, IntPtr.Zero);
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct Timespec
    {
        public long Seconds;
        public long Nanoseconds;
    }

    [LibraryImport("libc", EntryPoint = "nanosleep")]
    private static partial int NanoSleep(in Timespec request, IntPtr remaining);
}
