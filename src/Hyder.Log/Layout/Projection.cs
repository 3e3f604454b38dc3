using System.Text.Json;
using System.Text.Json.Serialization;

namespace Hyder.Log.Layout;

/// <summary>
/// The layout of the log in one epoch: which sequencer hands out addresses and which replica
/// chains store them. Address ranges are consecutive; in a range of k chains, address a is stored
/// by chain (a − start) mod k. Adding a stripe starts a new range above the tail, so an address
/// never moves. Immutable; a change is a new projection with the next epoch.
/// </summary>
public sealed class Projection
{
    /// <summary>The epoch; the projection store holds exactly one projection per epoch.</summary>
    public required long Epoch { get; init; }

    /// <summary>The block size every unit is configured with.</summary>
    public int BlockSize { get; init; } = Hyder.Log.Units.LogUnitOptions.DefaultBlockSize;

    /// <summary>The sequencer's endpoint.</summary>
    public required string Sequencer { get; init; }

    /// <summary>The address ranges, by increasing start; the first starts at 0, the last is open.</summary>
    public required IReadOnlyList<LayoutRange> Ranges { get; init; }

    /// <summary>The chain (head first, tail last) that stores <paramref name="address"/>.</summary>
    public IReadOnlyList<string> ChainFor(long address)
    {
        var range = RangeFor(address);
        var k = range.Chains.Count;
        return range.Chains[(int)((address - range.Start) % k)];
    }

    /// <summary>The range that holds <paramref name="address"/>.</summary>
    public LayoutRange RangeFor(long address)
    {
        for (var i = Ranges.Count - 1; i > 0; i--)
        {
            if (address >= Ranges[i].Start)
            {
                return Ranges[i];
            }
        }

        return Ranges[0];
    }

    /// <summary>Every unit endpoint, each once.</summary>
    public IReadOnlyList<string> AllUnits()
    {
        var seen = new List<string>();
        foreach (var range in Ranges)
        {
            foreach (var chain in range.Chains)
            {
                foreach (var unit in chain)
                {
                    if (!seen.Contains(unit))
                    {
                        seen.Add(unit);
                    }
                }
            }
        }

        return seen;
    }

    /// <summary>Throws <see cref="ArgumentException"/> if the layout is not usable.</summary>
    public void Validate()
    {
        if (Epoch < 1)
        {
            throw new ArgumentException("A projection's epoch starts at 1.");
        }

        if (Ranges.Count == 0 || Ranges[0].Start != 0)
        {
            throw new ArgumentException("The first range of a projection starts at address 0.");
        }

        for (var i = 0; i < Ranges.Count; i++)
        {
            if (i > 0 && Ranges[i].Start <= Ranges[i - 1].Start)
            {
                throw new ArgumentException("Ranges must start at increasing addresses.");
            }

            if (Ranges[i].Chains.Count == 0 || Ranges[i].Chains.Any(c => c.Count == 0))
            {
                throw new ArgumentException("Every range needs at least one chain and every chain a unit.");
            }
        }
    }

    /// <summary>A copy with another epoch and, optionally, other ranges or sequencer.</summary>
    public Projection With(long epoch, IReadOnlyList<LayoutRange>? ranges = null, string? sequencer = null) => new()
    {
        Epoch = epoch,
        BlockSize = BlockSize,
        Sequencer = sequencer ?? Sequencer,
        Ranges = ranges ?? Ranges,
    };

    /// <summary>The projection as JSON.</summary>
    public string ToJson() => JsonSerializer.Serialize(this, ProjectionJson.Default.Projection);

    /// <summary>Parses a projection and validates it.</summary>
    public static Projection FromJson(string json)
    {
        var projection = JsonSerializer.Deserialize(json, ProjectionJson.Default.Projection)
            ?? throw new ArgumentException("Empty projection document.");
        projection.Validate();
        return projection;
    }

    /// <inheritdoc />
    public override string ToString() => ToJson();
}

/// <summary>A range of addresses from <see cref="Start"/> striped over <see cref="Chains"/>.</summary>
public sealed class LayoutRange
{
    /// <summary>The first address of the range.</summary>
    public required long Start { get; init; }

    /// <summary>The replica chains; each lists unit endpoints from head to tail.</summary>
    public required IReadOnlyList<IReadOnlyList<string>> Chains { get; init; }
}

/// <summary>Source-generated JSON for projections (camelCase, indented for operators).</summary>
[JsonSourceGenerationOptions(PropertyNamingPolicy = JsonKnownNamingPolicy.CamelCase, WriteIndented = true)]
[JsonSerializable(typeof(Projection))]
internal sealed partial class ProjectionJson : JsonSerializerContext;
