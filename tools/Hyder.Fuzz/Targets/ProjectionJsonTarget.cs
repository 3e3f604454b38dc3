using System.Text;
using System.Text.Json;
using Hyder.Fuzz.Engine;
using Hyder.Log.Layout;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// A projection document as the log reads it from a projection file, etcd or a projection server:
/// <see cref="Projection.FromJson"/> on the UTF-8 text, then the uses every client makes of the
/// layout (the chain of an address, the units, the document written back).
/// </summary>
internal sealed class ProjectionJsonTarget : FuzzTarget
{
    public override string Name => "projection-json";

    public override string Description => "Projection.FromJson (projection files, etcd values, InstallProjection/GetProjection payloads) and the layout's lookups";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(ArgumentException), typeof(JsonException)];

    public override void Execute(byte[] input, Seed seed)
    {
        var projection = Projection.FromJson(Encoding.UTF8.GetString(input));
        projection.AllUnits();
        // Clients look up valid addresses only: 0 to LogAddress.Max.
        projection.ChainFor(0);
        projection.ChainFor(Math.Clamp(projection.Ranges[^1].Start, 0, Hyder.Log.LogAddress.Max));
        projection.ChainFor(Hyder.Log.LogAddress.Max);
        projection.ToJson();
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        var samples = Samples();
        for (var i = 0; i < samples.Count; i++)
        {
            yield return new Seed($"projection {i}", Encoding.UTF8.GetBytes(samples[i].ToJson()));
        }

        yield return new Seed("compact projection", Encoding.UTF8.GetBytes(
            "{\"epoch\":3,\"blockSize\":4096,\"sequencer\":\"127.0.0.1:7100\",\"ranges\":[{\"start\":0,\"chains\":[[\"127.0.0.1:7101\"]]}]}"));
    }

    /// <summary>Layouts as operators make them: one unit, replica chains, stripes added over time.</summary>
    public static List<Projection> Samples() =>
    [
        new() { Epoch = 1, Sequencer = "127.0.0.1:7100", Ranges = [new LayoutRange { Start = 0, Chains = [["127.0.0.1:7101"]] }] },
        new()
        {
            Epoch = 4,
            BlockSize = 8192,
            Sequencer = "10.0.0.1:7100",
            Ranges =
            [
                new LayoutRange { Start = 0, Chains = [["10.0.0.2:7101", "10.0.0.3:7101"]] },
                new LayoutRange { Start = 1000, Chains = [["10.0.0.2:7101", "10.0.0.3:7101"], ["10.0.0.4:7101", "10.0.0.5:7101"]] },
            ],
        },
        new()
        {
            Epoch = 9_000_000_000,
            BlockSize = 65536,
            Sequencer = "[::1]:7100",
            Ranges = [new LayoutRange { Start = 0, Chains = [["[::1]:7101", "[::1]:7102", "[::1]:7103"]] }, new LayoutRange { Start = 72_057_594_037_927_935, Chains = [["[::1]:7104"]] }],
        },
    ];
}
