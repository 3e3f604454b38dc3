namespace Hyder.Benchmarks.Meld;

/// <summary>Everything the report shows for one configuration.</summary>
/// <param name="Workload">The configuration.</param>
/// <param name="ReadShare">Share of reads among the logged transactions' operations.</param>
/// <param name="ReadOnlyDropped">Transactions drawn read-only and left out of the log.</param>
/// <param name="Counts">Counters from the untimed pass.</param>
/// <param name="Meld">Trial melds per second.</param>
/// <param name="BruteForce">Brute-force validations per second.</param>
/// <param name="MeldBytes">Bytes allocated per trial meld.</param>
/// <param name="BruteForceBytes">Bytes allocated per brute-force validation.</param>
/// <param name="Decide">Decide-only melds per second (nothing built), timed alternately with brute force.</param>
/// <param name="BruteForceBeside">Brute-force validations per second in the same alternation as <paramref name="Decide"/>.</param>
public sealed record MeldResult(
    MeldWorkload Workload,
    double ReadShare,
    int ReadOnlyDropped,
    MeldCounts Counts,
    Throughput Meld,
    Throughput BruteForce,
    double MeldBytes,
    double BruteForceBytes,
    Throughput Decide,
    Throughput BruteForceBeside)
{
    /// <summary>Decide-only meld over brute force: both decide and build nothing.</summary>
    public double DecideSpeedup => Decide.Median / BruteForceBeside.Median;

    /// <summary>Meld throughput over brute-force throughput (Stopwatch medians, measured alternately).</summary>
    public double Speedup => Meld.Median / BruteForce.Median;

    /// <summary>Spread of the meld repetitions, as a share of the median.</summary>
    public double Spread => (Meld.Best - Meld.Slowest) / Meld.Median;
}
