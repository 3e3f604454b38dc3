using System.Diagnostics;

namespace Hyder.Benchmarks.Meld;

/// <summary>Operations per second over several repetitions.</summary>
/// <param name="Median">Median by Stopwatch (wall clock).</param>
/// <param name="Best">Fastest repetition by Stopwatch.</param>
/// <param name="Slowest">Slowest repetition by Stopwatch.</param>
/// <param name="CpuMedian">Median by the thread's CPU time (NaN where unavailable).</param>
public readonly record struct Throughput(double Median, double Best, double Slowest, double CpuMedian);

/// <summary>
/// Throughput as the report measures it: whole passes, median of several repetitions, meld and
/// brute force alternating so both see the same machine load.
/// </summary>
public static class MeldTiming
{
    private static int s_sink;

    /// <summary>Keeps the passes' results observable (never read for anything else).</summary>
    public static int Sink => s_sink;

    /// <summary>Times two passes over the same log, alternating repetitions of each.</summary>
    /// <param name="first">One pass of the first contender (meld).</param>
    /// <param name="second">One pass of the second contender (brute force).</param>
    /// <param name="operationsPerPass">Operations in one pass.</param>
    /// <param name="repetitions">Timed repetitions of each.</param>
    /// <param name="minimumRepetition">Each repetition runs whole passes for at least this long.</param>
    public static (Throughput First, Throughput Second) Alternating(Func<int> first, Func<int> second, int operationsPerPass, int repetitions, TimeSpan minimumRepetition)
    {
        var n1 = PassesFor(first, minimumRepetition);
        var n2 = PassesFor(second, minimumRepetition);
        var wall1 = new double[repetitions];
        var cpu1 = new double[repetitions];
        var wall2 = new double[repetitions];
        var cpu2 = new double[repetitions];
        for (var r = 0; r < repetitions; r++)
        {
            (wall1[r], cpu1[r]) = Repetition(first, n1, operationsPerPass);
            (wall2[r], cpu2[r]) = Repetition(second, n2, operationsPerPass);
        }

        return (Summarize(wall1, cpu1), Summarize(wall2, cpu2));
    }

    /// <summary>Bytes this thread allocates per operation over one pass, after a warm-up pass.</summary>
    public static double BytesPerOperation(Func<int> pass, int operationsPerPass)
    {
        s_sink += pass();
        var before = GC.GetAllocatedBytesForCurrentThread();
        s_sink += pass();
        var after = GC.GetAllocatedBytesForCurrentThread();
        return (double)(after - before) / operationsPerPass;
    }

    /// <summary>Warms the pass up (tiered compilation) and returns how many passes fill a repetition.</summary>
    private static int PassesFor(Func<int> pass, TimeSpan minimumRepetition)
    {
        var sw = Stopwatch.StartNew();
        var passes = 0;
        while (passes < 3 || sw.Elapsed < TimeSpan.FromMilliseconds(100))
        {
            s_sink += pass();
            passes++;
        }

        return (int)Math.Max(1, Math.Ceiling(minimumRepetition.TotalSeconds / (sw.Elapsed.TotalSeconds / passes)));
    }

    private static (double Wall, double Cpu) Repetition(Func<int> pass, int passes, int operationsPerPass)
    {
        var cpu = ThreadClock.Seconds();
        var sw = Stopwatch.StartNew();
        for (var p = 0; p < passes; p++)
        {
            s_sink += pass();
        }

        var wall = sw.Elapsed.TotalSeconds;
        cpu = ThreadClock.Seconds() - cpu;
        var ops = (double)passes * operationsPerPass;
        return (ops / wall, ops / cpu);
    }

    private static Throughput Summarize(double[] wall, double[] cpu)
    {
        Array.Sort(wall);
        Array.Sort(cpu);
        return new Throughput(wall[wall.Length / 2], wall[^1], wall[0], cpu[cpu.Length / 2]);
    }
}
