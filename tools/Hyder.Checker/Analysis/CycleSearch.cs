namespace Hyder.Checker;

/// <summary>
/// Finds concrete cycles inside strongly connected components and names them (Elle's approach):
/// G0 in the ww graph; G1c in the ww+wr graph, through a wr edge; in the full graph, a cycle
/// through an rw edge with as few other rw edges as possible (none: G-single; otherwise
/// G2-item); with real-time edges, a cycle through a real-time edge, named by its data edges
/// plus "-realtime"; where the fewest is two or more, also a cycle whose rw edges are never adjacent
/// (G-nonadjacent, <c>CycleSearch.Nonadjacent.cs</c>). One cycle per component and class: enough to show the anomaly, bounded
/// work on large components.
/// </summary>
internal sealed partial class CycleSearch
{
    private readonly Inference _inf;
    private readonly DependencyGraph _g;
    private readonly int _budget;
    private readonly int[] _cost;
    private readonly int[] _via;
    private readonly List<int> _touched = [];

    public CycleSearch(Inference inf, int searchesPerComponent)
    {
        _inf = inf;
        _g = inf.Graph;
        _budget = searchesPerComponent;
        _cost = new int[_g.NodeCount];
        _via = new int[_g.NodeCount];
        Array.Fill(_cost, int.MaxValue);
    }

    public void Run(bool realtime)
    {
        Search(EdgeKind.WW, EdgeKind.WW, realtimeName: false);
        Search(EdgeKind.WW | EdgeKind.WR, EdgeKind.WR, realtimeName: false);
        Search(EdgeKind.Data, EdgeKind.RW, realtimeName: false);
        if (realtime)
        {
            Search(EdgeKind.Data | EdgeKind.Realtime, EdgeKind.Realtime, realtimeName: true);
        }
    }

    /// <summary>For each component of the <paramref name="kinds"/> graph, the best cycle through a <paramref name="through"/> edge.</summary>
    private void Search(EdgeKind kinds, EdgeKind through, bool realtimeName)
    {
        var (component, cycles) = StronglyConnected.Find(_g, kinds);
        foreach (var members in cycles)
        {
            var c = component[members[0]];
            List<int>? best = null;
            var bestRw = int.MaxValue;
            var tries = 0;
            var enough = through == EdgeKind.RW ? 1 : 0;
            foreach (var v in members)
            {
                for (var p = _g.Start[v]; p < _g.Start[v + 1] && tries < _budget && bestRw > enough; p++)
                {
                    var e = _g.Edges[_g.Adjacent[p]];
                    if (e.Kind != through || component[e.To] != c)
                    {
                        continue;
                    }

                    tries++;
                    var path = Path(e.To, e.From, kinds, component, c);
                    if (path is null)
                    {
                        continue;
                    }

                    path.Insert(0, _g.Adjacent[p]);
                    var rw = path.Count(i => _g.Edges[i].Kind == EdgeKind.RW);
                    if (rw < bestRw)
                    {
                        best = path;
                        bestRw = rw;
                    }
                }

                if (tries >= _budget || bestRw <= enough)
                {
                    break;
                }
            }

            if (best is not null)
            {
                Report(best, realtimeName);
            }

            if (through == EdgeKind.RW && bestRw >= 2 && Nonadjacent(members, component, c) is { } cycle)
            {
                Report(cycle, realtime: false, Anomalies.GNonadjacent);
            }
        }
    }

    /// <summary>A path from <paramref name="from"/> to <paramref name="to"/> inside component <paramref name="c"/> with the fewest rw edges (0-1 breadth-first search).</summary>
    private List<int>? Path(int from, int to, EdgeKind kinds, int[] component, int c)
    {
        var deque = new LinkedList<int>();
        Visit(from, 0, -1);
        deque.AddFirst(from);
        while (deque.Count > 0)
        {
            var v = deque.First!.Value;
            deque.RemoveFirst();
            if (v == to)
            {
                break;
            }

            for (var p = _g.Start[v]; p < _g.Start[v + 1]; p++)
            {
                var e = _g.Edges[_g.Adjacent[p]];
                if ((e.Kind & kinds) == 0 || component[e.To] != c)
                {
                    continue;
                }

                var w = e.Kind == EdgeKind.RW ? 1 : 0;
                if (_cost[v] + w < _cost[e.To])
                {
                    Visit(e.To, _cost[v] + w, _g.Adjacent[p]);
                    if (w == 0)
                    {
                        deque.AddFirst(e.To);
                    }
                    else
                    {
                        deque.AddLast(e.To);
                    }
                }
            }
        }

        List<int>? path = null;
        if (_cost[to] != int.MaxValue)
        {
            path = [];
            for (var v = to; v != from; v = _g.Edges[_via[v]].From)
            {
                path.Add(_via[v]);
            }

            path.Reverse();
        }

        foreach (var v in _touched)
        {
            _cost[v] = int.MaxValue;
        }

        _touched.Clear();
        return path;
    }

    private void Visit(int v, int cost, int via)
    {
        if (_cost[v] == int.MaxValue)
        {
            _touched.Add(v);
        }

        _cost[v] = cost;
        _via[v] = via;
    }

    private void Report(List<int> cycle, bool realtime, string? nameOverride = null)
    {
        var edges = cycle.Select(i => _g.Edges[i]).ToArray();
        var rw = edges.Count(e => e.Kind == EdgeKind.RW);
        var wr = edges.Any(e => e.Kind == EdgeKind.WR);
        var name = rw switch
        {
            0 => wr ? Anomalies.G1c : Anomalies.G0,
            1 => Anomalies.GSingle,
            _ => Anomalies.G2Item,
        };
        var what = rw switch
        {
            0 => wr ? "write-write and write-read dependencies only" : "write-write dependencies only",
            1 => "exactly one anti-dependency",
            _ => $"{rw} anti-dependencies",
        };
        if (realtime)
        {
            name = Anomalies.Realtime(name);
            what += ", closed by real-time order";
        }

        if (nameOverride is not null)
        {
            name = nameOverride;
            what += ", no two of them adjacent";
        }

        var txns = edges.Select(e => _inf.Txns[e.From]).ToArray();
        _inf.Found.Add(new Anomaly(_inf.Txns, name, txns, edges, $"a cycle of {edges.Length} transactions with {what}"));
    }
}
