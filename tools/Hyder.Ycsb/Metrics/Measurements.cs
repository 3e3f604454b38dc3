using HdrHistogram;

namespace Hyder.Ycsb.Metrics;

/// <summary>
/// Everything measured over some span of a run: one HdrHistogram of microseconds per
/// <see cref="Series"/> and the transaction counters. Not thread-safe; <see cref="MeasurementRecorder"/>
/// guards the instances workers write and <see cref="Add"/> merges them.
/// </summary>
/// <remarks>
/// The histograms keep 3 significant digits (every reported latency is within 0.1 % of a recorded
/// one) in fixed memory, without allocation per sample, as YCSB's own HdrHistogram measurement
/// does; like YCSB, the report's mean, minimum and maximum come from the histogram too. Samples
/// above one hour, or negative, are recorded as one hour or 0 and counted (<see cref="ClampedOf"/>):
/// HdrHistogram refuses values outside its range.
/// </remarks>
internal sealed class Measurements
{
    /// <summary>One hour in microseconds: the highest latency recorded as itself.</summary>
    public const long HighestTrackableLatency = 3_600_000_000;

    /// <summary>Significant decimal digits the histograms keep.</summary>
    public const int SignificantDigits = 3;

    private readonly LongHistogram[] _histograms;
    private readonly long[] _clamped = new long[SeriesNames.Count];
    private readonly long[] _aborts = new long[AbortCauses.Count];

    public Measurements()
    {
        _histograms = new LongHistogram[SeriesNames.Count];
        for (var i = 0; i < _histograms.Length; i++)
        {
            _histograms[i] = new LongHistogram(HighestTrackableLatency, SignificantDigits);
        }
    }

    /// <summary>Transactions that committed.</summary>
    public long Committed { get; private set; }

    /// <summary>Transactions given up after the last allowed retry aborted.</summary>
    public long GaveUp { get; private set; }

    /// <summary>Attempts that failed with an error that is not an abort (the error ends the run).</summary>
    public long Errors { get; private set; }

    /// <summary>Reads that found no record (a YCSB read of a key not yet inserted, for example).</summary>
    public long NotFound { get; private set; }

    /// <summary>Counter reads that returned a value the issued Adds cannot produce (a consistency failure of the target).</summary>
    public long InconsistentReads { get; private set; }

    /// <summary>Transactions a bounded Add turned down (BoundViolated): a business outcome, not retried, not an abort.</summary>
    public long BoundRejected { get; private set; }

    /// <summary>Every aborted attempt, whatever its cause.</summary>
    public long Aborted => _aborts.Sum();

    /// <summary>The latencies of <paramref name="series"/>, in microseconds.</summary>
    public HistogramBase this[Series series] => _histograms[(int)series];

    /// <summary>Samples of <paramref name="series"/> that were out of range and recorded as 0 or one hour.</summary>
    public long ClampedOf(Series series) => _clamped[(int)series];

    public long AbortsOf(AbortCause cause) => _aborts[(int)cause];

    public void Record(Series series, long microseconds)
    {
        if ((ulong)microseconds > HighestTrackableLatency)
        {
            microseconds = microseconds < 0 ? 0 : HighestTrackableLatency;
            _clamped[(int)series]++;
        }

        _histograms[(int)series].RecordValue(microseconds);
    }

    public void CountCommit() => Committed++;

    public void CountAbort(AbortCause cause) => _aborts[(int)cause]++;

    public void CountGaveUp() => GaveUp++;

    public void CountError() => Errors++;

    public void CountNotFound() => NotFound++;

    public void CountInconsistentRead() => InconsistentReads++;

    public void CountBoundRejected() => BoundRejected++;

    public void Add(Measurements other)
    {
        for (var i = 0; i < _histograms.Length; i++)
        {
            _histograms[i].Add(other._histograms[i]);
            _clamped[i] += other._clamped[i];
        }

        for (var i = 0; i < _aborts.Length; i++)
        {
            _aborts[i] += other._aborts[i];
        }

        Committed += other.Committed;
        GaveUp += other.GaveUp;
        Errors += other.Errors;
        NotFound += other.NotFound;
        InconsistentReads += other.InconsistentReads;
        BoundRejected += other.BoundRejected;
    }

    public void Reset()
    {
        foreach (var histogram in _histograms)
        {
            histogram.Reset();
        }

        Array.Clear(_clamped);
        Array.Clear(_aborts);
        Committed = 0;
        GaveUp = 0;
        Errors = 0;
        NotFound = 0;
        InconsistentReads = 0;
        BoundRejected = 0;
    }
}
