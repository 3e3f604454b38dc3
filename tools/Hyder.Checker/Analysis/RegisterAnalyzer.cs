namespace Hyder.Checker;

/// <summary>
/// Read-write register inference. Unique written values make wr exact: a read names its writer.
/// Version order is only partly observable, so ww and rw come from the pairs "a is older than b"
/// that are known:
/// <list type="bullet">
/// <item>nil (never written) is older than every committed write, when someone read nil;</item>
/// <item>write follows read: a transaction that read a (or nil) and then wrote b installed b after a;</item>
/// <item>a caller-supplied order per key (for example from the database's log).</item>
/// </list>
/// A pair need not be adjacent in the real order; the edges it gives (writer(a) ww writer(b),
/// reader(a) rw writer(b)) stand for paths of the real graph with the same number of
/// anti-dependencies, so the cycles found and their classes are sound.
/// </summary>
internal static class RegisterAnalyzer
{
    public static void Analyze(Inference inf, IReadOnlyDictionary<long, IReadOnlyList<long>>? versionOrder, bool writeFollowsRead)
    {
        var writers = Writers.Index(inf.Txns, lists: false);
        var readers = new Dictionary<(long Key, long? Value), List<int>>();
        var older = new HashSet<(long Key, long? A, long B)>();
        var firstRead = new Dictionary<long, long?>();
        var updaters = new Dictionary<(long Key, long? Value), List<int>>();
        var written = new Dictionary<long, long>();
        foreach (var t in inf.Txns)
        {
            if (t.Status != TxnStatus.Ok)
            {
                continue;
            }

            firstRead.Clear();
            written.Clear();
            foreach (var m in t.Mops)
            {
                if (m.Kind == MopKind.Write)
                {
                    written[m.Key] = m.Value!.Value;
                }
                else if (m.Kind == MopKind.ReadRegister && m.Known && !written.ContainsKey(m.Key))
                {
                    // An external read: it observes other transactions, not this one's writes.
                    firstRead.TryAdd(m.Key, m.Value);
                    ObserveRead(inf, writers, readers, t.Id, m.Key, m.Value);
                }
            }

            foreach (var (key, value) in firstRead)
            {
                if (written.TryGetValue(key, out var final))
                {
                    if (writeFollowsRead)
                    {
                        older.Add((key, value, final));
                    }

                    if (!updaters.TryGetValue((key, value), out var list))
                    {
                        updaters[(key, value)] = list = [];
                    }

                    list.Add(t.Id);
                }
            }
        }

        foreach (var ((key, value), list) in updaters)
        {
            if (list.Count > 1)
            {
                var ids = string.Join(", ", list.Select(t => $"T{t}"));
                inf.Report(Anomalies.LostUpdate, $"{ids} all read register {key} = {value?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "nil"} and then wrote it: all but one overwrote a version they never saw", [.. list]);
            }
        }

        if (versionOrder is not null)
        {
            foreach (var (key, order) in versionOrder)
            {
                for (var i = 0; i < order.Count; i++)
                {
                    older.Add((key, i == 0 ? null : order[i - 1], order[i]));
                }
            }
        }

        // nil precedes every installed version of a key someone read as nil.
        var nilKeys = readers.Keys.Where(k => k.Value is null).Select(k => k.Key).ToHashSet();
        foreach (var ((key, value), w) in writers)
        {
            if (w.Final && nilKeys.Contains(key))
            {
                older.Add((key, null, value));
            }
        }

        foreach (var (key, a, b) in older)
        {
            if (!writers.TryGetValue((key, b), out var wb) || !wb.Final || !inf.MayHaveCommitted(wb.Txn))
            {
                continue;
            }

            if (a is { } av && writers.TryGetValue((key, av), out var wa) && inf.MayHaveCommitted(wa.Txn))
            {
                inf.Graph.Add(new Edge(wa.Txn, wb.Txn, EdgeKind.WW, false, key, av, b));
            }

            if (readers.TryGetValue((key, a), out var rs))
            {
                foreach (var r in rs)
                {
                    inf.Graph.Add(new Edge(r, wb.Txn, EdgeKind.RW, false, key, a, b));
                }
            }
        }
    }

    private static void ObserveRead(Inference inf, Dictionary<(long, long), Writer> writers, Dictionary<(long, long?), List<int>> readers, int reader, long key, long? value)
    {
        if (value is { } v)
        {
            if (!writers.TryGetValue((key, v), out var w))
            {
                inf.Report(Anomalies.GarbageRead, $"T{reader} read register {key} = {v}, but no transaction wrote {v} to it", reader);
                return;
            }

            if (w.Txn == reader)
            {
                inf.Report(Anomalies.Internal, $"T{reader} read register {key} = {v} before writing {v} itself", reader);
                return;
            }

            if (!inf.MayHaveCommitted(w.Txn))
            {
                inf.Report(Anomalies.G1a, $"T{reader} read register {key} = {v}, written by T{w.Txn}, which failed", reader, w.Txn);
                return;
            }

            if (!w.Final)
            {
                inf.Report(Anomalies.G1b, $"T{reader} read register {key} = {v}, but T{w.Txn} overwrote {v} before it finished", reader, w.Txn);
            }

            inf.Graph.Add(new Edge(w.Txn, reader, EdgeKind.WR, false, key, v, v));
        }

        if (!readers.TryGetValue((key, value), out var list))
        {
            readers[(key, value)] = list = [];
        }

        list.Add(reader);
    }
}
