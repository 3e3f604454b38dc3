namespace Hyder.Checker;

/// <summary>
/// Tarjan's strongly connected components over the edges of some kinds, iterative (an explicit
/// stack instead of recursion), so a chain of a million transactions does not overflow the
/// thread's stack.
/// </summary>
internal static class StronglyConnected
{
    /// <summary>
    /// Component id of every node (ids dense from 0) and the members of each component of two
    /// or more nodes (self loops never occur: the graph drops them).
    /// </summary>
    public static (int[] Component, List<int[]> Cycles) Find(DependencyGraph g, EdgeKind kinds)
    {
        var n = g.NodeCount;
        var index = new int[n];
        var low = new int[n];
        var component = new int[n];
        var onStack = new bool[n];
        Array.Fill(index, -1);
        var stack = new Stack<int>();
        var calls = new Stack<(int Node, int Next)>();
        var next = 0;
        var components = 0;
        var cycles = new List<int[]>();
        var start = g.Start;
        var adjacent = g.Adjacent;
        var to = g.To;
        var kind = g.Kind;

        for (var root = 0; root < n; root++)
        {
            if (index[root] >= 0)
            {
                continue;
            }

            Visit(root);
            while (calls.Count > 0)
            {
                var (v, pos) = calls.Pop();
                var descended = false;
                while (pos < start[v + 1])
                {
                    var e = adjacent[pos++];
                    if ((kind[e] & kinds) == 0)
                    {
                        continue;
                    }

                    var w = to[e];
                    if (index[w] < 0)
                    {
                        calls.Push((v, pos));
                        Visit(w);
                        descended = true;
                        break;
                    }

                    if (onStack[w])
                    {
                        low[v] = Math.Min(low[v], index[w]);
                    }
                }

                if (descended)
                {
                    continue;
                }

                if (low[v] == index[v])
                {
                    var members = new List<int>();
                    int w;
                    do
                    {
                        w = stack.Pop();
                        onStack[w] = false;
                        component[w] = components;
                        members.Add(w);
                    }
                    while (w != v);

                    components++;
                    if (members.Count > 1)
                    {
                        cycles.Add([.. members]);
                    }
                }

                if (calls.Count > 0)
                {
                    var parent = calls.Peek().Node;
                    low[parent] = Math.Min(low[parent], low[v]);
                }
            }
        }

        return (component, cycles);

        void Visit(int v)
        {
            index[v] = low[v] = next++;
            stack.Push(v);
            onStack[v] = true;
            calls.Push((v, start[v]));
        }
    }
}
