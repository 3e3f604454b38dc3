namespace Hyder.Checker;

/// <summary>
/// G-nonadjacent: a cycle through an rw edge in which no two rw edges follow each other, found by
/// a breadth-first search over (transaction, arrived by an rw edge) states that refuses an rw
/// edge after an rw edge, including around the closing edge.
/// </summary>
internal sealed partial class CycleSearch
{
    private const int Unvisited = -2;
    private int[]? _stateEdge;
    private int[]? _statePrev;

    private List<int>? Nonadjacent(int[] members, int[] component, int c)
    {
        var tries = 0;
        foreach (var v in members)
        {
            for (var p = _g.Start[v]; p < _g.Start[v + 1]; p++)
            {
                var e = _g.Adjacent[p];
                if (_g.Kind[e] != EdgeKind.RW || component[_g.To[e]] != c)
                {
                    continue;
                }

                if (tries++ >= _budget)
                {
                    return null;
                }

                if (NonadjacentPath(_g.To[e], v, component, c) is { } path)
                {
                    path.Insert(0, e);
                    return path;
                }
            }
        }

        return null;
    }

    /// <summary>From <paramref name="from"/>, entered by an rw edge, to <paramref name="to"/>, entered by anything but rw.</summary>
    private List<int>? NonadjacentPath(int from, int to, int[] component, int c)
    {
        if (_stateEdge is null || _statePrev is null)
        {
            _stateEdge = new int[2 * _g.NodeCount];
            _statePrev = new int[2 * _g.NodeCount];
            Array.Fill(_stateEdge, Unvisited);
        }

        var queue = new Queue<int>();
        var start = (from * 2) + 1;
        _stateEdge[start] = -1;
        _touched.Add(start);
        queue.Enqueue(start);
        var found = -1;
        while (queue.Count > 0 && found < 0)
        {
            var s = queue.Dequeue();
            var v = s >> 1;
            var afterRw = (s & 1) == 1;
            for (var p = _g.Start[v]; p < _g.Start[v + 1]; p++)
            {
                var e = _g.Adjacent[p];
                var kind = _g.Kind[e];
                var w = _g.To[e];
                if ((kind & EdgeKind.Data) == 0 || component[w] != c || (kind == EdgeKind.RW && afterRw))
                {
                    continue;
                }

                var next = (w * 2) + (kind == EdgeKind.RW ? 1 : 0);
                if (_stateEdge[next] != Unvisited)
                {
                    continue;
                }

                _stateEdge[next] = e;
                _statePrev[next] = s;
                _touched.Add(next);
                if (next == to * 2)
                {
                    found = next;
                    break;
                }

                queue.Enqueue(next);
            }
        }

        List<int>? path = null;
        if (found >= 0)
        {
            path = [];
            for (var s = found; s != start; s = _statePrev[s])
            {
                path.Add(_stateEdge[s]);
            }

            path.Reverse();
        }

        foreach (var s in _touched)
        {
            _stateEdge[s] = Unvisited;
        }

        _touched.Clear();
        return path;
    }
}
