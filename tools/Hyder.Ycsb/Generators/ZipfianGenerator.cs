namespace Hyder.Ycsb.Generators;

/// <summary>
/// Zipfian ranks over n items by Gray et al.'s method ("Quickly generating billion-record synthetic
/// databases", SIGMOD 1994), the one YCSB's ZipfianGenerator uses: rank 0 is the most popular and
/// rank r has weight 1 / (r + 1)^θ, for 0 &lt; θ &lt; 1. The item count may change between calls
/// (the latest distribution grows with inserts): ζ(n, θ) is then updated incrementally.
/// </summary>
internal sealed class ZipfianGenerator
{
    /// <summary>YCSB's <c>zipfianconstant</c> default.</summary>
    public const double DefaultConstant = 0.99;

    /// <summary>Below this many terms ζ is summed exactly; above, the tail uses Euler–Maclaurin.</summary>
    private const long ExactTerms = 100_000;

    private readonly double _theta;
    private readonly double _alpha;
    private readonly double _zeta2;
    private readonly double _half;
    private long _items;
    private double _zetaN;
    private double _eta;

    public ZipfianGenerator(long items, double theta = DefaultConstant, double? zetaN = null)
    {
        if (!(theta > 0 && theta < 1))
        {
            throw new ArgumentOutOfRangeException(nameof(theta), theta, "Gray's Zipfian generator needs 0 < θ < 1.");
        }

        if (items < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(items), items, "At least one item is needed.");
        }

        _theta = theta;
        _alpha = 1 / (1 - theta);
        _zeta2 = Zeta(2, theta);
        _half = Math.Pow(0.5, theta);
        _items = items;
        _zetaN = zetaN ?? Zeta(items, theta);
        _eta = Eta();
    }

    public double Theta => _theta;

    public long Items => _items;

    public double ZetaN => _zetaN;

    /// <summary>A rank in [0, items).</summary>
    public long Next(ref Rng rng) => Next(ref rng, _items);

    /// <summary>A rank in [0, items), with the generator resized to <paramref name="items"/> first.</summary>
    public long Next(ref Rng rng, long items)
    {
        if (items != _items)
        {
            Resize(items);
        }

        var u = rng.NextDouble();
        var uz = u * _zetaN;
        if (uz < 1)
        {
            return 0;
        }

        if (uz < 1 + _half)
        {
            return Math.Min(1, _items - 1);
        }

        var rank = (long)(_items * Math.Pow((_eta * u) - _eta + 1, _alpha));
        return Math.Min(rank, _items - 1);
    }

    /// <summary>ζ(n, θ) = Σ_{i=1..n} 1 / i^θ: exact up to 100,000 terms, Euler–Maclaurin (three correction terms) beyond.</summary>
    public static double Zeta(long n, double theta) => ZetaRange(0, n, theta);

    private void Resize(long items)
    {
        if (items < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(items), items, "At least one item is needed.");
        }

        _zetaN = items > _items ? _zetaN + ZetaRange(_items, items, _theta) : Zeta(items, _theta);
        _items = items;
        _eta = Eta();
    }

    private double Eta() => _items < 2 ? 0 : (1 - Math.Pow(2.0 / _items, 1 - _theta)) / (1 - (_zeta2 / _zetaN));

    /// <summary>Σ_{i=from+1..to} 1 / i^θ.</summary>
    private static double ZetaRange(long from, long to, double theta)
    {
        var exactEnd = Math.Min(to, from + ExactTerms);
        var sum = 0.0;
        for (var i = exactEnd; i > from; i--)
        {
            // Smallest terms first: less rounding.
            sum += Math.Pow(i, -theta);
        }

        if (to > exactEnd)
        {
            sum += EulerMaclaurinTail(exactEnd, to, theta);
        }

        return sum;
    }

    /// <summary>Σ_{i=m+1..n} f(i) for f(x) = x^-θ.</summary>
    private static double EulerMaclaurinTail(long m, long n, double theta)
    {
        double lower = m, upper = n;
        var integral = (Math.Pow(upper, 1 - theta) - Math.Pow(lower, 1 - theta)) / (1 - theta);
        var f = (Math.Pow(upper, -theta) - Math.Pow(lower, -theta)) / 2;
        var f1 = -theta * (Math.Pow(upper, -theta - 1) - Math.Pow(lower, -theta - 1)) / 12;
        var f3 = theta * (theta + 1) * (theta + 2) * (Math.Pow(upper, -theta - 3) - Math.Pow(lower, -theta - 3)) / 720;
        return integral + f + f1 + f3;
    }
}
