using System.Numerics;
using System.Runtime.CompilerServices;

namespace Hyder.Ycsb.Metrics;

/// <summary>
/// An HDR-style latency histogram: log-linear buckets that keep 3 significant decimal digits,
/// fixed memory, no allocation per sample. Not thread-safe: each worker thread records into its
/// own instance (<see cref="MeasurementRecorder"/>) and instances are merged for reports.
/// </summary>
/// <remarks>
/// Values below 2 · 1024 have a bucket each. Above, a value v with ⌊log2 v⌋ = 10 + e falls in one of
/// the 1024 buckets of width 2^e that cover [2^(10+e), 2^(11+e)), so a bucket's width is at most
/// v / 1024: any value reported for a percentile is within 0.098 % of a recorded value (HDR's
/// "3 significant digits" needs 0.1 %). The count, minimum, maximum and sum are exact.
/// Values above <see cref="HighestTrackableValue"/> are clamped to it and counted in
/// <see cref="ClampedCount"/>; negative values are clamped to 0 and counted there too.
/// </remarks>
internal sealed class LatencyHistogram
{
    /// <summary>log2 of the number of linear buckets per power of two (1024 gives 3 significant digits).</summary>
    private const int SubBucketBits = 10;
    private const int SubBucketHalf = 1 << SubBucketBits;
    private const int SubBucketCount = SubBucketHalf << 1;

    /// <summary>One hour in microseconds: the default highest trackable latency.</summary>
    public const long DefaultHighestTrackableValue = 3_600_000_000;

    private readonly long[] _counts;
    private long _totalCount;
    private long _clampedCount;
    private long _min = long.MaxValue;
    private long _max;
    private long _sum;

    public LatencyHistogram(long highestTrackableValue = DefaultHighestTrackableValue)
    {
        if (highestTrackableValue < SubBucketCount)
        {
            throw new ArgumentOutOfRangeException(nameof(highestTrackableValue), highestTrackableValue, $"Must be at least {SubBucketCount}.");
        }

        HighestTrackableValue = highestTrackableValue;
        _counts = new long[IndexOf(highestTrackableValue) + 1];
    }

    /// <summary>The largest value recorded as itself; larger values are clamped to it.</summary>
    public long HighestTrackableValue { get; }

    /// <summary>Samples recorded (including clamped ones).</summary>
    public long TotalCount => _totalCount;

    /// <summary>Samples that were out of range and recorded as 0 or <see cref="HighestTrackableValue"/>.</summary>
    public long ClampedCount => _clampedCount;

    /// <summary>The smallest recorded value (after clamping), or 0 when empty.</summary>
    public long Min => _totalCount == 0 ? 0 : _min;

    /// <summary>The largest recorded value (after clamping), or 0 when empty.</summary>
    public long Max => _max;

    /// <summary>The exact mean of the recorded values (after clamping), or 0 when empty.</summary>
    public double Mean => _totalCount == 0 ? 0 : (double)_sum / _totalCount;

    /// <summary>Memory the buckets take, in bytes.</summary>
    public int FootprintBytes => _counts.Length * sizeof(long);

    /// <summary>Records one value: an array increment and four compares.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Record(long value)
    {
        if ((ulong)value > (ulong)HighestTrackableValue)
        {
            value = value < 0 ? 0 : HighestTrackableValue;
            _clampedCount++;
        }

        _counts[IndexOf(value)]++;
        _totalCount++;
        _sum += value;
        if (value < _min)
        {
            _min = value;
        }

        if (value > _max)
        {
            _max = value;
        }
    }

    /// <summary>Adds every sample of <paramref name="other"/> to this histogram.</summary>
    public void Add(LatencyHistogram other)
    {
        if (other.HighestTrackableValue != HighestTrackableValue)
        {
            throw new ArgumentException("Histograms of different ranges cannot be merged.", nameof(other));
        }

        if (other._totalCount == 0)
        {
            return;
        }

        var mine = _counts;
        var theirs = other._counts;
        for (var i = 0; i < mine.Length; i++)
        {
            mine[i] += theirs[i];
        }

        _totalCount += other._totalCount;
        _clampedCount += other._clampedCount;
        _sum += other._sum;
        _min = Math.Min(_min, other._min);
        _max = Math.Max(_max, other._max);
    }

    /// <summary>Forgets every sample.</summary>
    public void Reset()
    {
        if (_totalCount == 0)
        {
            return;
        }

        Array.Clear(_counts);
        _totalCount = 0;
        _clampedCount = 0;
        _sum = 0;
        _min = long.MaxValue;
        _max = 0;
    }

    /// <summary>
    /// The value at <paramref name="percentile"/> (0-100): the highest value equivalent to the
    /// bucket holding the sample of that rank, capped by the exact maximum, so a percentile never
    /// under-reports and is within 0.1 % of a recorded value. 0 when empty.
    /// </summary>
    public long ValueAtPercentile(double percentile)
    {
        if (_totalCount == 0)
        {
            return 0;
        }

        percentile = Math.Clamp(percentile, 0, 100);
        var rank = Math.Max(1, (long)Math.Ceiling(percentile / 100 * _totalCount));
        long seen = 0;
        for (var i = 0; i < _counts.Length; i++)
        {
            seen += _counts[i];
            if (seen >= rank)
            {
                return Math.Max(Math.Min(HighestEquivalent(i), _max), Min);
            }
        }

        return _max;
    }

    /// <summary>The bucket a value falls in.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal static int IndexOf(long value)
    {
        if (value < SubBucketCount)
        {
            return (int)value;
        }

        // value >> shift is in [1024, 2048); each shift adds one half-range of 1024 buckets.
        var shift = BitOperations.Log2((ulong)value) - SubBucketBits;
        return (shift * SubBucketHalf) + (int)(value >> shift);
    }

    /// <summary>The smallest value that falls in bucket <paramref name="index"/>.</summary>
    internal static long LowestEquivalent(int index)
    {
        if (index < SubBucketCount)
        {
            return index;
        }

        var shift = (index / SubBucketHalf) - 1;
        var sub = (index % SubBucketHalf) + SubBucketHalf;
        return (long)sub << shift;
    }

    /// <summary>The largest value that falls in bucket <paramref name="index"/>.</summary>
    internal static long HighestEquivalent(int index)
    {
        if (index < SubBucketCount)
        {
            return index;
        }

        var shift = (index / SubBucketHalf) - 1;
        return LowestEquivalent(index) + (1L << shift) - 1;
    }
}
