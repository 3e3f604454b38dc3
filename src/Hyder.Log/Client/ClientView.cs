using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Units;

namespace Hyder.Log.Client;

/// <summary>A projection with its endpoints resolved, so the hot path finds a chain without allocating.</summary>
internal sealed class ClientView
{
    private readonly ILogUnit[][][] _chains;

    public ClientView(Projection projection, ILogConnector connector)
    {
        Projection = projection;
        Sequencer = connector.Sequencer(projection.Sequencer);
        var units = new Dictionary<string, ILogUnit>(StringComparer.Ordinal);
        _chains = new ILogUnit[projection.Ranges.Count][][];
        for (var r = 0; r < projection.Ranges.Count; r++)
        {
            var range = projection.Ranges[r];
            _chains[r] = new ILogUnit[range.Chains.Count][];
            for (var c = 0; c < range.Chains.Count; c++)
            {
                _chains[r][c] = range.Chains[c].Select(e => units.TryGetValue(e, out var u) ? u : units[e] = connector.Unit(e)).ToArray();
            }
        }

        AllUnits = [.. units.Values];
    }

    public Projection Projection { get; }

    public long Epoch => Projection.Epoch;

    public ISequencer Sequencer { get; }

    public ILogUnit[] AllUnits { get; }

    /// <summary>The chain of <paramref name="address"/>, head first.</summary>
    public ILogUnit[] ChainFor(long address)
    {
        var ranges = Projection.Ranges;
        var r = ranges.Count - 1;
        while (r > 0 && address < ranges[r].Start)
        {
            r--;
        }

        var chains = _chains[r];
        return chains[(int)((address - ranges[r].Start) % chains.Length)];
    }
}
