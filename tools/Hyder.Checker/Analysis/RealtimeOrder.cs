namespace Hyder.Checker;

/// <summary>
/// Real-time edges: T1 precedes T2 when T1 completed ok before T2 was invoked. Only the
/// transitive reduction is kept: each invocation links from the "frontier", the committed
/// transactions no other completed transaction has since followed; a completion removes from
/// the frontier what the completed transaction already follows.
/// </summary>
internal static class RealtimeOrder
{
    public static void Analyze(Inference inf)
    {
        var events = new int[inf.Txns.Count == 0 ? 0 : inf.Txns.Max(t => Math.Max(t.InvokeIndex, t.CompleteIndex)) + 1];
        Array.Fill(events, -1);
        foreach (var t in inf.Txns)
        {
            if (t.Status == TxnStatus.Fail)
            {
                continue;
            }

            events[t.InvokeIndex] = t.Id;
            if (t.Status == TxnStatus.Ok)
            {
                events[t.CompleteIndex] = t.Id;
            }
        }

        var frontier = new HashSet<int>();
        var predecessors = new Dictionary<int, int[]>();
        for (var i = 0; i < events.Length; i++)
        {
            var id = events[i];
            if (id < 0)
            {
                continue;
            }

            var t = inf.Txns[id];
            if (t.InvokeIndex == i)
            {
                var before = frontier.ToArray();
                foreach (var f in before)
                {
                    inf.Graph.Add(Edge.Realtime(f, id));
                }

                predecessors[id] = before;
            }
            else
            {
                frontier.ExceptWith(predecessors[id]);
                predecessors.Remove(id);
                frontier.Add(id);
            }
        }
    }
}
