namespace Hyder.Checker;

/// <summary>
/// Shared state of one check: the transactions, the graph being built and the anomalies found
/// so far. The workload analyzers add to it.
/// </summary>
internal sealed class Inference
{
    public Inference(IReadOnlyList<Txn> txns)
    {
        Txns = txns;
        Graph = new DependencyGraph(txns.Count);
    }

    public IReadOnlyList<Txn> Txns { get; }

    public DependencyGraph Graph { get; }

    public List<Anomaly> Found { get; } = [];

    public void Report(string name, string explanation, params int[] txns) =>
        Found.Add(new Anomaly(Txns, name, txns.Distinct().Select(t => Txns[t]).ToArray(), [], explanation));

    /// <summary>A transaction whose writes may have taken effect: committed or indeterminate.</summary>
    public bool MayHaveCommitted(int txn) => Txns[txn].Status != TxnStatus.Fail;
}

/// <summary>Who wrote a value: the transaction and whether it was its last write of that key.</summary>
internal readonly record struct Writer(int Txn, bool Final);

/// <summary>Indexes every append or write (ok, info and failed transactions) by key and value.</summary>
internal static class Writers
{
    public static Dictionary<(long Key, long Value), Writer> Index(IReadOnlyList<Txn> txns, bool lists)
    {
        var index = new Dictionary<(long, long), Writer>();
        var last = new Dictionary<long, long>();
        foreach (var t in txns)
        {
            last.Clear();
            foreach (var m in t.Mops)
            {
                if (m.IsWrite && m.IsList == lists)
                {
                    last[m.Key] = m.Value!.Value;
                }
            }

            foreach (var m in t.Mops)
            {
                if (!m.IsWrite || m.IsList != lists)
                {
                    continue;
                }

                var value = m.Value!.Value;
                if (!index.TryAdd((m.Key, value), new Writer(t.Id, last[m.Key] == value)))
                {
                    var other = index[(m.Key, value)].Txn;
                    throw new InvalidHistoryException(
                        $"{(lists ? "list" : "register")} {m.Key}: value {value} is written by T{other} and by T{t.Id}; written values must be unique per key");
                }
            }
        }

        return index;
    }
}
