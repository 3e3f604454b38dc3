using Hyder.Ycsb.Metrics;

namespace Hyder.Ycsb.Driver;

/// <summary>What one phase measured after its warm-up, and the target's own figures over the same window.</summary>
internal sealed record PhaseResult(string Phase, Measurements Totals, TimeSpan RunTime, long CommittedOperations)
{
    /// <summary>Rows of the report's target section (<see cref="Targets.ITarget.SummarizeAsync"/>).</summary>
    public IReadOnlyList<(string Metric, double Value)> Target { get; init; } = [];
}

/// <summary>A snapshot the driver hands to the status output every interval.</summary>
internal sealed record StatusSnapshot(
    TimeSpan Elapsed,
    TimeSpan Interval,
    Measurements IntervalMeasurements,
    long InFlight,
    bool WarmingUp,
    long CommittedOperations);

/// <summary>Where the driver reports progress while a phase runs.</summary>
internal interface IStatusSink
{
    void Status(StatusSnapshot snapshot);

    void Finished(PhaseResult result);
}
