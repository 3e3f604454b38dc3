namespace Hyder.Checker;

/// <summary>
/// List-append inference. Every committed read of a key is a prefix of the key's one append
/// order, so the longest read is the order (as far as anyone observed it); a read that is not
/// its prefix is an incompatible-order anomaly and gives no anti-dependency. Then: ww between
/// writers of consecutive elements, wr from the writer of the last element a read saw (not its
/// own) to the reader, rw from a reader to the writer of the first element it did not see.
/// </summary>
internal static class ListAppendAnalyzer
{
    private readonly record struct Read(int Txn, IReadOnlyList<long> Values);

    public static void Analyze(Inference inf)
    {
        var writers = Writers.Index(inf.Txns, lists: true);
        var reads = new Dictionary<long, List<Read>>();
        foreach (var t in inf.Txns)
        {
            if (t.Status != TxnStatus.Ok)
            {
                continue;
            }

            foreach (var m in t.Mops)
            {
                if (m.Kind == MopKind.ReadList && m.Known)
                {
                    if (!reads.TryGetValue(m.Key, out var list))
                    {
                        reads[m.Key] = list = [];
                    }

                    list.Add(new Read(t.Id, m.List!));
                }
            }
        }

        var garbage = new HashSet<(long, long)>();
        var aborted = new HashSet<(int, int)>();
        var distinct = new HashSet<long>();
        foreach (var (key, keyReads) in reads)
        {
            var order = keyReads.MaxBy(r => r.Values.Count).Values;
            var incompatible = 0;
            foreach (var r in keyReads)
            {
                CheckElements(inf, writers, key, r, garbage, aborted, distinct);
                var compatible = IsPrefix(r.Values, order);
                if (!compatible && incompatible++ < 3)
                {
                    inf.Report(Anomalies.IncompatibleOrder,
                        $"list {key}: T{r.Txn} read {Mop.FormatList(r.Values)}, which is not a prefix of {Mop.FormatList(order)} (the longest read)",
                        r.Txn, keyReads.First(x => ReferenceEquals(x.Values, order)).Txn);
                }

                AddReadEdges(inf, writers, key, r, order, compatible);
            }

            for (var i = 0; i + 1 < order.Count; i++)
            {
                if (writers.TryGetValue((key, order[i]), out var a) && writers.TryGetValue((key, order[i + 1]), out var b) &&
                    inf.MayHaveCommitted(a.Txn) && inf.MayHaveCommitted(b.Txn))
                {
                    inf.Graph.Add(new Edge(a.Txn, b.Txn, EdgeKind.WW, true, key, order[i], order[i + 1]));
                }
            }
        }
    }

    private static void CheckElements(Inference inf, Dictionary<(long, long), Writer> writers, long key, Read r, HashSet<(long, long)> garbage, HashSet<(int, int)> aborted, HashSet<long> distinct)
    {
        distinct.Clear();
        foreach (var v in r.Values)
        {
            if (!distinct.Add(v))
            {
                inf.Report(Anomalies.DuplicateElements, $"T{r.Txn} read list {key} as {Mop.FormatList(r.Values)}: {v} appears more than once", r.Txn);
                break;
            }
        }

        foreach (var v in r.Values)
        {
            if (!writers.TryGetValue((key, v), out var w))
            {
                if (garbage.Add((key, v)))
                {
                    inf.Report(Anomalies.GarbageRead, $"T{r.Txn} read list {key} as {Mop.FormatList(r.Values)}, but no transaction appended {v} to it", r.Txn);
                }
            }
            else if (!inf.MayHaveCommitted(w.Txn) && aborted.Add((r.Txn, w.Txn)))
            {
                inf.Report(Anomalies.G1a, $"T{r.Txn} read list {key} as {Mop.FormatList(r.Values)}, including {v}, appended by T{w.Txn}, which failed", r.Txn, w.Txn);
            }
        }

        // The last element another transaction appended: its writer must have been done with the key.
        for (var i = r.Values.Count - 1; i >= 0; i--)
        {
            if (writers.TryGetValue((key, r.Values[i]), out var w) && w.Txn != r.Txn)
            {
                if (!w.Final && inf.MayHaveCommitted(w.Txn))
                {
                    inf.Report(Anomalies.G1b, $"T{r.Txn} read list {key} as {Mop.FormatList(r.Values)}, ending in {r.Values[i]}, but T{w.Txn} appended more to list {key} after {r.Values[i]}", r.Txn, w.Txn);
                }

                break;
            }
        }
    }

    private static void AddReadEdges(Inference inf, Dictionary<(long, long), Writer> writers, long key, Read r, IReadOnlyList<long> order, bool compatible)
    {
        for (var i = r.Values.Count - 1; i >= 0; i--)
        {
            if (writers.TryGetValue((key, r.Values[i]), out var w) && w.Txn != r.Txn)
            {
                if (inf.MayHaveCommitted(w.Txn))
                {
                    inf.Graph.Add(new Edge(w.Txn, r.Txn, EdgeKind.WR, true, key, r.Values[i], r.Values[i]));
                }

                break;
            }
        }

        // A read that ends in the reader's own append is followed by its ww edge, not an rw edge.
        var endsInOwn = r.Values.Count > 0 && writers.TryGetValue((key, r.Values[^1]), out var last) && last.Txn == r.Txn;
        if (compatible && !endsInOwn && r.Values.Count < order.Count &&
            writers.TryGetValue((key, order[r.Values.Count]), out var next) && inf.MayHaveCommitted(next.Txn))
        {
            long? seen = r.Values.Count == 0 ? null : r.Values[^1];
            inf.Graph.Add(new Edge(r.Txn, next.Txn, EdgeKind.RW, true, key, seen, order[r.Values.Count]));
        }
    }

    private static bool IsPrefix(IReadOnlyList<long> prefix, IReadOnlyList<long> of)
    {
        if (prefix.Count > of.Count)
        {
            return false;
        }

        for (var i = 0; i < prefix.Count; i++)
        {
            if (prefix[i] != of[i])
            {
                return false;
            }
        }

        return true;
    }
}
