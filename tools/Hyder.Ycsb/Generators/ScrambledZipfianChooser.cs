namespace Hyder.Ycsb.Generators;

/// <summary>
/// YCSB's default request distribution (ScrambledZipfianGenerator): a Zipfian rank over a fixed
/// space of 10^10 items, hashed with 64-bit FNV-1a and reduced modulo the record count, so the
/// popular keys are scattered over the key space instead of clustered at its start. The record count
/// may grow between calls without recomputing ζ. With θ = 0.99 ζ(10^10) is YCSB's constant
/// 26.46902820178302; other θ compute it once.
/// </summary>
internal sealed class ScrambledZipfianChooser : IKeyChooser
{
    /// <summary>The item space the Zipfian ranks are drawn from (YCSB's <c>ITEM_COUNT</c>).</summary>
    public const long ItemCount = 10_000_000_000;

    /// <summary>ζ(10^10, 0.99) as YCSB states it (<c>ZETAN</c>).</summary>
    public const double ZetaForDefaultConstant = 26.46902820178302;

    private readonly ZipfianGenerator _zipfian;

    public ScrambledZipfianChooser(double theta = ZipfianGenerator.DefaultConstant)
    {
        _zipfian = new ZipfianGenerator(ItemCount, theta, theta == ZipfianGenerator.DefaultConstant ? ZetaForDefaultConstant : null);
    }

    public long Next(ref Rng rng, long count) => (long)(Fnv.Hash64(_zipfian.Next(ref rng)) % (ulong)count);
}

/// <summary>
/// The latest distribution (YCSB's SkewedLatestGenerator): Zipfian over the records that exist,
/// rank 0 being the most recently inserted key.
/// </summary>
internal sealed class LatestChooser : IKeyChooser
{
    private readonly ZipfianGenerator _zipfian;

    public LatestChooser(double theta = ZipfianGenerator.DefaultConstant)
    {
        _zipfian = new ZipfianGenerator(1, theta);
    }

    public long Next(ref Rng rng, long count) => count - 1 - _zipfian.Next(ref rng, count);
}

/// <summary>The 64-bit FNV-1a hash of a value's eight little-endian bytes, as YCSB's <c>fnvhash64</c> computes it.</summary>
internal static class Fnv
{
    private const ulong OffsetBasis = 0xCBF29CE484222325UL;
    private const ulong Prime = 1099511628211UL;

    /// <summary>The hash, made non-negative the way YCSB does (absolute value of the signed result).</summary>
    public static ulong Hash64(long value)
    {
        var hash = OffsetBasis;
        var v = (ulong)value;
        for (var i = 0; i < 8; i++)
        {
            hash ^= v & 0xFF;
            hash *= Prime;
            v >>= 8;
        }

        var signed = (long)hash;
        return signed < 0 ? (ulong)(-signed) : (ulong)signed;
    }
}
