using System.Globalization;

namespace Hyder.Server.Diagnostics;

/// <summary>
/// CPU time of this process's threads grouped by name (Linux <c>/proc/self/task</c>): the pipeline
/// names its stage threads (<c>final-meld</c>, <c>premeld-N</c>, <c>group-meld</c>), the server
/// its <c>deserialize-N</c> and <c>submit</c> threads; executors, the log client and the log
/// reader run on thread-pool workers (<see cref="PoolGroup"/>). Used by <see cref="StageBudget"/>
/// and the server benchmark.
/// </summary>
public static class ThreadTimes
{
    /// <summary>The group of the runtime's thread-pool workers.</summary>
    public const string PoolGroup = "thread pool";

    // USER_HZ: 100 on every Linux the runtime supports.
    private const double TicksPerSecond = 100;

    /// <summary>Seconds of CPU per thread (by thread id, with its group); empty where /proc is not available.</summary>
    public static Dictionary<int, (string Group, double Seconds)> Capture()
    {
        var result = new Dictionary<int, (string Group, double Seconds)>();
        if (!OperatingSystem.IsLinux() || !Directory.Exists("/proc/self/task"))
        {
            return result;
        }

        foreach (var dir in Directory.EnumerateDirectories("/proc/self/task"))
        {
            try
            {
                var stat = File.ReadAllText(Path.Combine(dir, "stat"));
                var open = stat.IndexOf('(', StringComparison.Ordinal);
                var close = stat.LastIndexOf(')');
                var fields = stat[(close + 2)..].Split(' ');

                // After "(comm) ": utime and stime are the 12th and 13th fields.
                var ticks = long.Parse(fields[11], CultureInfo.InvariantCulture) + long.Parse(fields[12], CultureInfo.InvariantCulture);
                result[int.Parse(Path.GetFileName(dir), CultureInfo.InvariantCulture)] = (Group(stat[(open + 1)..close]), ticks / TicksPerSecond);
            }
            catch (IOException)
            {
                // The thread exited while it was read.
            }
        }

        return result;
    }

    /// <summary>Seconds of CPU per group in one capture.</summary>
    public static Dictionary<string, double> ByGroup(Dictionary<int, (string Group, double Seconds)> threads)
    {
        var d = new Dictionary<string, double>(StringComparer.Ordinal);
        foreach (var (_, (group, seconds)) in threads)
        {
            d[group] = d.GetValueOrDefault(group) + seconds;
        }

        return d;
    }

    /// <summary>
    /// The CPU spent between two captures, per group: thread by thread, so that thread-pool workers
    /// that start in between count whole; those that exit in between are lost.
    /// </summary>
    public static Dictionary<string, double> Delta(Dictionary<int, (string Group, double Seconds)> before, Dictionary<int, (string Group, double Seconds)> after)
    {
        var d = new Dictionary<string, double>(StringComparer.Ordinal);
        foreach (var (tid, (group, seconds)) in after)
        {
            var earlier = before.TryGetValue(tid, out var b) && b.Group == group ? b.Seconds : 0;
            d[group] = d.GetValueOrDefault(group) + Math.Max(0, seconds - earlier);
        }

        return d;
    }

    /// <summary>A thread's group: its name without a trailing "-N", or <see cref="PoolGroup"/>.</summary>
    public static string Group(string comm)
    {
        if (comm is ".NET TP Worker" or ".NET ThreadPool" or ".NET Long Runni")
        {
            return PoolGroup;
        }

        var dash = comm.LastIndexOf('-');
        return dash > 0 && dash < comm.Length - 1 && comm[(dash + 1)..].All(char.IsAsciiDigit) ? comm[..dash] : comm;
    }
}
