namespace Hyder.Ycsb.Generators;

/// <summary>
/// Chooses the key number an operation touches, out of the <c>count</c> records that exist now
/// (numbers 0 .. count - 1). One instance per worker: choosers may cache state (zeta sums) and are
/// not thread-safe. Deterministic: the same generator state and counts give the same keys.
/// </summary>
internal interface IKeyChooser
{
    long Next(ref Rng rng, long count);
}

/// <summary>The request distributions the tool offers.</summary>
internal enum Distribution
{
    Uniform,
    Zipfian,
    Hotspot,
    Latest,
}

/// <summary>Parameters of the distributions, with YCSB's defaults.</summary>
internal sealed record DistributionSettings
{
    /// <summary>The Zipfian constant θ (YCSB's <c>zipfianconstant</c>, 0.99).</summary>
    public double ZipfianConstant { get; init; } = ZipfianGenerator.DefaultConstant;

    /// <summary>Fraction of the keys that is hot (YCSB's <c>hotspotdatafraction</c>, 0.2).</summary>
    public double HotspotDataFraction { get; init; } = 0.2;

    /// <summary>Fraction of the operations that go to hot keys (YCSB's <c>hotspotopnfraction</c>, 0.8).</summary>
    public double HotspotOperationFraction { get; init; } = 0.8;

    public IKeyChooser Create(Distribution distribution) => distribution switch
    {
        Distribution.Uniform => new UniformChooser(),
        Distribution.Zipfian => new ScrambledZipfianChooser(ZipfianConstant),
        Distribution.Hotspot => new HotspotChooser(HotspotDataFraction, HotspotOperationFraction),
        Distribution.Latest => new LatestChooser(ZipfianConstant),
        _ => throw new ArgumentOutOfRangeException(nameof(distribution), distribution, null),
    };
}

/// <summary>Every key equally likely.</summary>
internal sealed class UniformChooser : IKeyChooser
{
    public long Next(ref Rng rng, long count) => rng.NextInt64(count);
}

/// <summary>
/// A hotspot (YCSB's HotspotIntegerGenerator; Hyder II §6.4.5): the first
/// ⌊count · dataFraction⌋ keys get <c>operationFraction</c> of the operations, uniformly, and the
/// rest get the others. Hyder II's "fraction x of the data gets 1 - x of the operations" is
/// dataFraction = x, operationFraction = 1 - x. An empty hot or cold set sends everything to the other.
/// </summary>
internal sealed class HotspotChooser : IKeyChooser
{
    private readonly double _dataFraction;
    private readonly double _operationFraction;

    public HotspotChooser(double dataFraction, double operationFraction)
    {
        if (dataFraction is < 0 or > 1 || double.IsNaN(dataFraction))
        {
            throw new ArgumentOutOfRangeException(nameof(dataFraction), dataFraction, "Must be within [0, 1].");
        }

        if (operationFraction is < 0 or > 1 || double.IsNaN(operationFraction))
        {
            throw new ArgumentOutOfRangeException(nameof(operationFraction), operationFraction, "Must be within [0, 1].");
        }

        _dataFraction = dataFraction;
        _operationFraction = operationFraction;
    }

    public long Next(ref Rng rng, long count)
    {
        var hot = (long)(count * _dataFraction);
        var cold = count - hot;
        var toHot = rng.NextDouble() < _operationFraction;
        if (hot > 0 && (toHot || cold == 0))
        {
            return rng.NextInt64(hot);
        }

        return hot + rng.NextInt64(cold);
    }
}
