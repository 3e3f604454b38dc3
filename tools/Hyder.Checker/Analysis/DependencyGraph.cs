namespace Hyder.Checker;

/// <summary>
/// Transactions as nodes (by id), inferred dependencies as edges. Duplicate edges (same ends,
/// same kind) are kept once, with the first justification found. <see cref="Seal"/> builds a
/// compact adjacency (CSR) for the searches.
/// </summary>
internal sealed class DependencyGraph(int nodes)
{
    private readonly List<Edge> _edges = [];
    private readonly HashSet<long> _seen = [];
    private int[]? _start;
    private int[]? _adjacent;
    private int[]? _to;
    private EdgeKind[]? _kind;

    public int NodeCount { get; } = nodes;

    public IReadOnlyList<Edge> Edges => _edges;

    /// <summary>Edge indexes leaving each node: <c>Adjacent[Start[v] .. Start[v + 1])</c>.</summary>
    public int[] Start => _start ?? throw new InvalidOperationException("graph not sealed");

    public int[] Adjacent => _adjacent ?? throw new InvalidOperationException("graph not sealed");

    /// <summary>Target of each edge, by edge index (the searches' hot loop reads these, not <see cref="Edge"/>).</summary>
    public int[] To => _to ?? throw new InvalidOperationException("graph not sealed");

    /// <summary>Kind of each edge, by edge index.</summary>
    public EdgeKind[] Kind => _kind ?? throw new InvalidOperationException("graph not sealed");

    public void Add(Edge e)
    {
        if (_start is not null)
        {
            throw new InvalidOperationException("the graph is sealed");
        }

        if (e.From == e.To)
        {
            return;
        }

        // From and To below 2^29, the kind in the low 4 bits: one long per edge identity.
        if (_seen.Add(((long)e.From << 34) | ((long)e.To << 4) | (long)e.Kind))
        {
            _edges.Add(e);
        }
    }

    public int Count(EdgeKind kind) => _edges.Count(e => (e.Kind & kind) != 0);

    public void Seal()
    {
        var start = new int[NodeCount + 1];
        foreach (var e in _edges)
        {
            start[e.From + 1]++;
        }

        for (var i = 0; i < NodeCount; i++)
        {
            start[i + 1] += start[i];
        }

        var fill = (int[])start.Clone();
        var adjacent = new int[_edges.Count];
        for (var i = 0; i < _edges.Count; i++)
        {
            adjacent[fill[_edges[i].From]++] = i;
        }

        _start = start;
        _adjacent = adjacent;
        _to = _edges.Select(e => e.To).ToArray();
        _kind = _edges.Select(e => e.Kind).ToArray();
        _seen.Clear();
    }
}
