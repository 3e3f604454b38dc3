using System.Diagnostics;

namespace Hyder.Fuzz.Engine;

/// <summary>How a run goes.</summary>
public sealed record FuzzOptions
{
    /// <summary>The run's seed: with a case number it fixes the case.</summary>
    public ulong Seed { get; init; } = 1;

    /// <summary>The first case number.</summary>
    public long FirstCase { get; init; }

    /// <summary>Cases to run (10^6: the long mode).</summary>
    public long Cases { get; init; } = 1_000_000;

    /// <summary>Stop a target after this long even if cases remain; null: no limit.</summary>
    public TimeSpan? TimeLimit { get; init; }

    /// <summary>A case running longer is a hang.</summary>
    public TimeSpan CaseTimeout { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>How often progress is reported.</summary>
    public TimeSpan ProgressInterval { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>Findings kept with their inputs (all are counted).</summary>
    public int MaxFindingsKept { get; init; } = 50;
}

/// <summary>What a case came to.</summary>
public enum CaseOutcome
{
    /// <summary>The decoder accepted the input.</summary>
    Success,

    /// <summary>The decoder rejected it with a documented, clear error.</summary>
    Rejected,

    /// <summary>The oracle holds something against it.</summary>
    Finding,
}

/// <summary>The outcome of one case.</summary>
public sealed record CaseResult(FuzzCase Case, CaseOutcome Outcome, Exception? Exception, long Allocated, TimeSpan Elapsed, Finding? Finding)
{
    /// <summary>Over the time budget on its first run, within it on the second: not a finding (see <c>ConfirmHang</c>).</summary>
    public bool Slow { get; init; }
}

/// <summary>
/// Runs cases of a target on a worker thread, watched by the calling thread: a case still running
/// after <see cref="FuzzOptions.CaseTimeout"/> is reported as a hang, its thread is abandoned
/// (.NET cannot stop it) and a new worker goes on with the next case.
/// </summary>
public sealed class FuzzRunner(FuzzOptions options, Action<string>? progress = null)
{
    private const long Idle = -1;
    private const long Abandoned = -2;

    /// <summary>The options this runner was made with.</summary>
    public FuzzOptions Options => options;

    /// <summary>Runs <see cref="FuzzOptions.Cases"/> cases of <paramref name="target"/>.</summary>
    public TargetReport Run(FuzzTarget target)
    {
        var report = new TargetReport(target.Name);
        WarmUp(target);
        var clock = Stopwatch.StartNew();
        var end = options.FirstCase + options.Cases;
        var next = options.FirstCase;
        var lastProgress = TimeSpan.Zero;
        while (next < end)
        {
            var worker = new Worker(this, target, report, next, end, clock);
            worker.Start();
            while (!worker.Finished.Wait(50))
            {
                var running = Volatile.Read(ref worker.Claim);
                if (running >= 0 && Stopwatch.GetElapsedTime(Volatile.Read(ref worker.StartedAt)) > options.CaseTimeout
                    && Interlocked.CompareExchange(ref worker.Claim, Abandoned, running) == running)
                {
                    // The case did not return in time: report it (unless a second run finishes)
                    // and carry on with a fresh thread.
                    var hang = FuzzCase.Build(target, options.Seed, running);
                    report.Add(ConfirmHang(target, running, new CaseResult(hang, CaseOutcome.Finding, null, 0, Stopwatch.GetElapsedTime(worker.StartedAt),
                        new Finding(target.Name, options.Seed, hang, FindingKind.Hang,
                            $"still running after {options.CaseTimeout.TotalMilliseconds:F0} ms (thread abandoned)", null, 0, Stopwatch.GetElapsedTime(worker.StartedAt)))),
                        options.MaxFindingsKept);
                    worker.Finished.Set();
                    break;
                }

                if (clock.Elapsed - lastProgress >= options.ProgressInterval)
                {
                    lastProgress = clock.Elapsed;
                    progress?.Invoke(report.ProgressLine(clock.Elapsed));
                }
            }

            next = worker.Abandon ? Volatile.Read(ref worker.LastStarted) + 1 : end;
            if (worker.StoppedByTime)
            {
                report.StoppedByTime = true;
                break;
            }
        }

        report.Elapsed = clock.Elapsed;
        return report;
    }

    /// <summary>Runs one case on a watched thread (the replay of a finding).</summary>
    public CaseResult RunCase(FuzzTarget target, long number)
    {
        WarmUp(target);
        var c = FuzzCase.Build(target, options.Seed, number);
        CaseResult? result = null;
        var thread = new Thread(() => result = Execute(target, c)) { IsBackground = true, Name = "fuzz-replay" };
        var started = Stopwatch.GetTimestamp();
        thread.Start();
        if (!thread.Join(options.CaseTimeout))
        {
            var elapsed = Stopwatch.GetElapsedTime(started);
            return new CaseResult(c, CaseOutcome.Finding, null, 0, elapsed,
                new Finding(target.Name, options.Seed, c, FindingKind.Hang, $"still running after {options.CaseTimeout.TotalMilliseconds:F0} ms", null, 0, elapsed));
        }

        return result!;
    }

    /// <summary>Judges one given input (a kept regression input) on a watched thread, as a case of <paramref name="origin"/>.</summary>
    public CaseResult RunInput(FuzzTarget target, Seed origin, byte[] input)
    {
        WarmUp(target);
        var c = new FuzzCase(-1, origin, input, ["given input"]);
        CaseResult? result = null;
        var thread = new Thread(() => result = Execute(target, c)) { IsBackground = true, Name = "fuzz-input" };
        thread.Start();
        return thread.Join(options.CaseTimeout)
            ? result!
            : new CaseResult(c, CaseOutcome.Finding, null, 0, options.CaseTimeout,
                new Finding(target.Name, options.Seed, c, FindingKind.Hang, $"still running after {options.CaseTimeout.TotalMilliseconds:F0} ms", null, 0, options.CaseTimeout));
    }

    /// <summary>Runs the corpus unmutated once, so first-call costs (JIT, static tables) are not charged to a case.</summary>
    private static void WarmUp(FuzzTarget target)
    {
        foreach (var seed in target.Corpus)
        {
            try
            {
                target.Execute((byte[])seed.Bytes.Clone(), seed);
            }
            catch (Exception e) when (target.IsDocumented(e))
            {
            }
        }
    }

    /// <summary>
    /// A case over the time budget runs once more, from freshly built bytes, on a thread of its
    /// own before it is called a hang: on a loaded machine a thread can lose its core for longer
    /// than the budget, while a decoder that really hangs (a loop that does not end, work out of
    /// proportion to the input) is over the budget again. A case that finishes in time the second
    /// time counts as <see cref="CaseResult.Slow"/> with the second run's outcome.
    /// </summary>
    private CaseResult ConfirmHang(FuzzTarget target, long number, CaseResult first)
    {
        if (first.Finding is not { Kind: FindingKind.Hang })
        {
            return first;
        }

        var again = FuzzCase.Build(target, options.Seed, number);
        CaseResult? second = null;
        var thread = new Thread(() => second = Execute(target, again)) { IsBackground = true, Name = "fuzz-confirm" };
        thread.Start();
        if (!thread.Join(options.CaseTimeout) || second!.Finding is { Kind: FindingKind.Hang })
        {
            return first;
        }

        return second with { Slow = true };
    }

    /// <summary>Runs one case on the current thread and judges it.</summary>
    private CaseResult Execute(FuzzTarget target, FuzzCase c)
    {
        Exception? error = null;
        var before = GC.GetAllocatedBytesForCurrentThread();
        var started = Stopwatch.GetTimestamp();
        try
        {
            target.Execute(c.Input, c.Origin);
        }
#pragma warning disable CA1031 // The oracle judges every exception, whatever its type.
        catch (Exception e)
#pragma warning restore CA1031
        {
            error = e;
        }

        var elapsed = Stopwatch.GetElapsedTime(started);
        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        Finding? finding = null;
        if (error is not null && !target.IsDocumented(error))
        {
            finding = new Finding(target.Name, options.Seed, c, FindingKind.Crash, $"{error.GetType().Name}: {error.Message}", error, allocated, elapsed);
        }
        else if (error is not null && string.IsNullOrWhiteSpace(error.Message))
        {
            finding = new Finding(target.Name, options.Seed, c, FindingKind.UnclearError, $"{error.GetType().Name} without a message", error, allocated, elapsed);
        }
        else if (allocated > target.AllocationBound(c.Input.Length))
        {
            finding = new Finding(target.Name, options.Seed, c, FindingKind.Allocation,
                $"{allocated} bytes allocated for {c.Input.Length} input bytes (bound {target.AllocationBound(c.Input.Length)})", error, allocated, elapsed);
        }
        else if (elapsed > options.CaseTimeout)
        {
            finding = new Finding(target.Name, options.Seed, c, FindingKind.Hang, $"took {elapsed.TotalMilliseconds:F0} ms", error, allocated, elapsed);
        }

        var outcome = finding is not null ? CaseOutcome.Finding : error is null ? CaseOutcome.Success : CaseOutcome.Rejected;
        return new CaseResult(c, outcome, error, allocated, elapsed, finding);
    }

    /// <summary>One worker thread: runs cases in order until done, out of time, or abandoned in a case.</summary>
    private sealed class Worker(FuzzRunner runner, FuzzTarget target, TargetReport report, long first, long end, Stopwatch clock)
    {
        public long Claim = Idle;
        public long StartedAt;
        public long LastStarted = first - 1;

        public ManualResetEventSlim Finished { get; } = new();

        public bool StoppedByTime { get; private set; }

        public bool Abandon => Volatile.Read(ref Claim) == Abandoned;

        public void Start() =>
            new Thread(Loop) { IsBackground = true, Name = $"fuzz-{target.Name}", Priority = ThreadPriority.BelowNormal }.Start();

        private void Loop()
        {
            for (var n = first; n < end; n++)
            {
                if (runner.Options.TimeLimit is { } limit && clock.Elapsed > limit)
                {
                    StoppedByTime = true;
                    break;
                }

                var c = FuzzCase.Build(target, runner.Options.Seed, n);
                Volatile.Write(ref LastStarted, n);
                Volatile.Write(ref StartedAt, Stopwatch.GetTimestamp());
                Volatile.Write(ref Claim, n);
                var result = runner.Execute(target, c);
                if (Interlocked.CompareExchange(ref Claim, Idle, n) != n)
                {
                    // The watcher gave up on this case and reported it; this thread is no longer wanted.
                    return;
                }

                result = runner.ConfirmHang(target, n, result);

                report.Add(result, runner.Options.MaxFindingsKept);
            }

            Finished.Set();
        }
    }
}
