using System.Diagnostics;
using System.Runtime.InteropServices;

namespace Hyder.Tree.Pipeline;

/// <summary>
/// The calling thread's CPU time (Linux <c>clock_gettime(CLOCK_THREAD_CPUTIME_ID)</c>, about a
/// syscall); elsewhere the wall clock, which counts time the thread was preempted too. For the
/// CPU budget per stage (DESIGN §6): measure a synchronous stretch of work on one thread.
/// </summary>
public static partial class ThreadCpu
{
    private const int ClockThreadCpuTimeId = 3;
    private static readonly bool s_linux = OperatingSystem.IsLinux();

    /// <summary>True when <see cref="NowNs"/> is the thread's CPU time, false when it is the wall clock.</summary>
    public static bool IsCpuTime => s_linux;

    /// <summary>Nanoseconds of CPU the calling thread has used (a monotonic origin; subtract two readings).</summary>
    public static long NowNs()
    {
        if (s_linux && ClockGetTime(ClockThreadCpuTimeId, out var ts) == 0)
        {
            return (ts.Seconds * 1_000_000_000L) + ts.Nanoseconds;
        }

        return (long)(Stopwatch.GetTimestamp() * (1e9 / Stopwatch.Frequency));
    }

    [StructLayout(LayoutKind.Sequential)]
    private struct TimeSpec
    {
        public long Seconds;
        public long Nanoseconds;
    }

    [LibraryImport("libc", EntryPoint = "clock_gettime")]
    private static partial int ClockGetTime(int clock, out TimeSpec ts);
}
