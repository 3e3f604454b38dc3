using System.Diagnostics;

namespace Hyder.Server.Diagnostics;

/// <summary>
/// The CPU budget of one server per committed transaction, by stage (DESIGN §6), between two
/// snapshots: what the executors spent (their own thread CPU around execute, validate, encode
/// and the outcome's last step), what each stage thread spent (Linux <c>/proc/self/task</c>, by
/// the names the server and pipeline give their threads), and final meld's utilisation and the
/// share of it inside meld proper. It makes the next bottleneck visible without a profiler.
/// </summary>
/// <remarks>
/// Thread-pool workers run the executors, the log client, the embedded log and the reader (and, in
/// a load generator, the clients): their CPU beyond the executors' measured stages is reported as
/// one figure, "append, log, reader, clients". Threads other than the stages and the thread pool
/// (the GC, timers) are "other".
/// </remarks>
public sealed class StageBudget
{
    private StageBudget(long[] executor, Dictionary<string, double> threads, long busyTicks, long meldTicks, long timestamp, double processSeconds)
    {
        Executor = executor;
        Threads = threads;
        BusyTicks = busyTicks;
        MeldTicks = meldTicks;
        Timestamp = timestamp;
        ProcessSeconds = processSeconds;
    }

    private long[] Executor { get; }

    private Dictionary<string, double> Threads { get; }

    private long BusyTicks { get; }

    private long MeldTicks { get; }

    private long Timestamp { get; }

    private double ProcessSeconds { get; }

    /// <summary>A snapshot of <paramref name="server"/>'s counters and this process's threads.</summary>
    public static StageBudget Take(TransactionServer server)
    {
        ArgumentNullException.ThrowIfNull(server);
        var executor = new long[(int)ExecutorStage.Count];
        for (var i = 0; i < executor.Length; i++)
        {
            executor[i] = server.Metrics.CpuNanoseconds((ExecutorStage)i);
        }

        var (busy, meld) = server.Pipeline.FinalMeldTicks;
        using var process = Process.GetCurrentProcess();
        return new StageBudget(executor, ThreadTimes.ByGroup(ThreadTimes.Capture()), busy, meld, Stopwatch.GetTimestamp(), process.TotalProcessorTime.TotalSeconds);
    }

    /// <summary>
    /// Rows of the budget from <paramref name="begin"/> to <paramref name="end"/>: CPU microseconds
    /// per committed transaction by stage, final meld's utilisation (% of wall time busy) and the
    /// share of its busy time inside meld proper.
    /// </summary>
    public static IReadOnlyList<(string Metric, double Value)> Rows(StageBudget begin, StageBudget end, long committed)
    {
        ArgumentNullException.ThrowIfNull(begin);
        ArgumentNullException.ThrowIfNull(end);
        double PerCommit(double seconds) => committed == 0 ? 0 : Math.Round(seconds * 1e6 / committed, 1);
        double ExecutorSeconds(ExecutorStage s) => (end.Executor[(int)s] - begin.Executor[(int)s]) / 1e9;
        var threads = new Dictionary<string, double>(StringComparer.Ordinal);
        foreach (var (group, seconds) in end.Threads)
        {
            threads[group] = Math.Max(0, seconds - begin.Threads.GetValueOrDefault(group));
        }

        double Group(string name) => threads.GetValueOrDefault(name);
        var execute = ExecutorSeconds(ExecutorStage.Execute);
        var validate = ExecutorSeconds(ExecutorStage.Validate);
        var encode = ExecutorSeconds(ExecutorStage.Encode);
        var outcome = ExecutorSeconds(ExecutorStage.Outcome);
        var pool = Group(ThreadTimes.PoolGroup);
        var named = Group("deserialize") + Group("submit") + Group("premeld") + Group("group-meld") + Group("final-meld") + pool;
        var process = end.ProcessSeconds - begin.ProcessSeconds;
        var wall = (end.Timestamp - begin.Timestamp) / (double)Stopwatch.Frequency;
        var busy = end.BusyTicks - begin.BusyTicks;
        var meld = end.MeldTicks - begin.MeldTicks;
        return
        [
            ("CpuUs/Commit(execute)", PerCommit(execute)),
            ("CpuUs/Commit(validate)", PerCommit(validate)),
            ("CpuUs/Commit(encode)", PerCommit(encode)),
            ("CpuUs/Commit(append,log,reader,clients)", PerCommit(Math.Max(0, pool - execute - validate - encode - outcome))),
            ("CpuUs/Commit(deserialize)", PerCommit(Group("deserialize"))),
            ("CpuUs/Commit(submit)", PerCommit(Group("submit"))),
            ("CpuUs/Commit(premeld)", PerCommit(Group("premeld"))),
            ("CpuUs/Commit(group-meld)", PerCommit(Group("group-meld"))),
            ("CpuUs/Commit(final-meld)", PerCommit(Group("final-meld"))),
            ("CpuUs/Commit(outcome)", PerCommit(outcome)),
            ("CpuUs/Commit(other:gc,timers)", PerCommit(Math.Max(0, process - named))),
            ("CpuUs/Commit(process)", PerCommit(process)),
            ("FinalMeldUtilisation(%)", wall <= 0 ? 0 : Math.Round(100.0 * busy / Stopwatch.Frequency / wall, 1)),
            ("FinalMeldInMeld(%)", busy == 0 ? 0 : Math.Round(100.0 * meld / busy, 1)),
        ];
    }
}
