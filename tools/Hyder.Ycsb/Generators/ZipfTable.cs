namespace Hyder.Ycsb.Generators;

/// <summary>
/// Zipfian ranks for any exponent α &gt; 0 (Doppel's LIKE uses α = 1.4, where Gray's method does not
/// apply) by inverting a precomputed cumulative table with a binary search: exact, 8 bytes per item,
/// O(log n) per draw. Immutable once built, so one table serves every worker.
/// </summary>
internal sealed class ZipfTable
{
    /// <summary>The most items a table may hold (512 MiB of doubles).</summary>
    public const long MaxItems = 1L << 26;

    private readonly double[] _cumulative;

    public ZipfTable(long items, double exponent)
    {
        if (items is < 1 or > MaxItems)
        {
            throw new ArgumentOutOfRangeException(nameof(items), items, $"Must be within [1, {MaxItems}].");
        }

        if (!(exponent >= 0) || double.IsInfinity(exponent))
        {
            throw new ArgumentOutOfRangeException(nameof(exponent), exponent, "Must be a finite number ≥ 0.");
        }

        Exponent = exponent;
        _cumulative = new double[items];
        var sum = 0.0;
        for (var i = 0; i < items; i++)
        {
            sum += Math.Pow(i + 1, -exponent);
            _cumulative[i] = sum;
        }
    }

    public double Exponent { get; }

    public long Items => _cumulative.Length;

    /// <summary>The probability of rank <paramref name="rank"/>.</summary>
    public double Probability(long rank) =>
        (_cumulative[rank] - (rank == 0 ? 0 : _cumulative[rank - 1])) / _cumulative[^1];

    /// <summary>A rank in [0, items): rank 0 is the most popular.</summary>
    public long Next(ref Rng rng)
    {
        var target = rng.NextDouble() * _cumulative[^1];
        var index = Array.BinarySearch(_cumulative, target);
        var rank = index >= 0 ? index + 1 : ~index;
        return Math.Min(rank, _cumulative.Length - 1);
    }
}
