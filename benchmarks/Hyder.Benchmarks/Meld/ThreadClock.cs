using System.Runtime.InteropServices;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// CPU time of the calling thread (Linux <c>CLOCK_THREAD_CPUTIME_ID</c>): unlike the Stopwatch it
/// does not count time the thread waited for a core, which matters on a shared 2-core machine.
/// </summary>
internal static partial class ThreadClock
{
    private const int ClockThreadCpuTime = 3;

    /// <summary>True when the clock can be read here.</summary>
    public static bool Available { get; } = OperatingSystem.IsLinux() && TryRead(out _);

    /// <summary>The thread's CPU time in seconds, or NaN where the clock is unavailable.</summary>
    public static double Seconds() => Available && TryRead(out var s) ? s : double.NaN;

    private static bool TryRead(out double seconds)
    {
        try
        {
            if (NativeMethods.clock_gettime(ClockThreadCpuTime, out var ts) == 0)
            {
                seconds = ts.Seconds + ts.Nanoseconds * 1e-9;
                return true;
            }
        }
        catch (DllNotFoundException)
        {
        }
        catch (EntryPointNotFoundException)
        {
        }

        seconds = double.NaN;
        return false;
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct TimeSpec
    {
        public long Seconds;
        public long Nanoseconds;
    }

    private static class NativeMethods
    {
        [DllImport("libc", SetLastError = false)]
        [DefaultDllImportSearchPaths(DllImportSearchPath.SafeDirectories)]
        public static extern int clock_gettime(int clockId, out TimeSpec time);
    }
}
