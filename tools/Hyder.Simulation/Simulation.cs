using Hyder.Checker;
using Hyder.Simulation.Cluster;
using Hyder.Tree;

namespace Hyder.Simulation;

/// <summary>The outcome of one seed.</summary>
public sealed record SimResult(
    SimOptions Options,
    string? Failure,
    long FailureStep,
    long Steps,
    TimeSpan VirtualTime,
    ulong TraceHash,
    long TraceEvents,
    SimStats Stats,
    string? CheckerReport,
    IReadOnlyList<string> RecentTrace)
{
    /// <summary>No invariant broke and the history passed the checker.</summary>
    public bool Passed => Failure is null;

    /// <summary>What to print for a failure: the seed, the replay line, the step and the message.</summary>
    public string Describe() => Passed
        ? $"seed {Options.Seed}: ok, {Steps} steps, {VirtualTime.TotalSeconds:F2} s virtual, trace {TraceHash:x16}; {Stats}"
        : $"seed {Options.Seed}: FAILED at step {FailureStep}: {Failure}\n  replay: {Options.ReplayLine}\n  {Stats}";
}

/// <summary>Runs one seed of the cluster simulation to the end.</summary>
public static class Simulation
{
    /// <summary>A run stops as failed when it has not finished after this much virtual time past its duration.</summary>
    public static readonly TimeSpan Overtime = TimeSpan.FromSeconds(120);

    /// <summary>Runs <paramref name="options"/>' seed: steps until the run ends or an invariant breaks, then checks the history.</summary>
    public static SimResult Run(SimOptions options)
    {
        // Awaits must continue inline on this thread: a host's context (a test runner's) would
        // capture them and run them elsewhere.
        var context = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(null);
        try
        {
            return RunHere(options);
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(context);
        }
    }

    private static SimResult RunHere(SimOptions options)
    {
        var cluster = new SimCluster(options);
        var scheduler = cluster.Scheduler;
        var run = scheduler.Spawn(cluster.RunAsync);
        var limit = (options.Duration + Overtime).Ticks;
        while (!run.IsCompleted && cluster.Failure is null)
        {
            if (!scheduler.Step())
            {
                cluster.Violation("the simulation ran out of work before the run finished (a deadlock)");
                break;
            }

            cluster.Invariants.AfterStep();
            if (scheduler.Now > limit)
            {
                cluster.Violation($"the run did not finish within {Overtime.TotalSeconds} s of virtual time after its duration");
            }
        }

        if (run.IsFaulted && cluster.Failure is null)
        {
            cluster.Violation($"the run failed: {run.Exception!.InnerException}");
        }

        if (scheduler.ForeignPosts > 0 && cluster.Failure is null)
        {
            cluster.Violation($"{scheduler.ForeignPosts} piece(s) of work were posted from another thread: the run is not deterministic; the first from {scheduler.FirstForeignPost}");
        }

        string? report = null;
        if (cluster.Failure is null)
        {
            var model = options.Isolation == IsolationLevel.SnapshotIsolation ? ConsistencyModel.SnapshotIsolation : ConsistencyModel.Serializable;
            var check = HistoryChecker.Check(cluster.BuildHistory(), new CheckOptions { Model = model });
            report = check.ToString();
            if (!check.Valid)
            {
                cluster.Violation($"the client history is not {model}: {string.Join(", ", check.Names)}");
            }
        }

        cluster.PowerOff();
        return new SimResult(
            options,
            cluster.Failure,
            cluster.FailureStep,
            scheduler.Steps,
            TimeSpan.FromTicks(scheduler.Now),
            cluster.Trace.Hash,
            cluster.Trace.Count,
            cluster.Stats,
            report,
            [.. cluster.Trace.Recent]);
    }
}
