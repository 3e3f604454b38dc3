namespace Hyder.Checker.Tests.Simulation;

/// <summary>
/// An in-memory multi-version store for the simulated executors: every committed write gets the
/// commit's sequence number, so a read at any earlier sequence number sees that snapshot.
/// List keys and register keys are separate, as in the checker.
/// </summary>
internal sealed class VersionedStore
{
    private readonly Dictionary<long, List<(long Seq, long Value)>> _lists = [];
    private readonly Dictionary<long, List<(long Seq, long Value)>> _registers = [];

    /// <summary>Sequence number of the last commit (0: nothing committed).</summary>
    public long Seq { get; private set; }

    public List<long> ReadList(long key, long at)
    {
        var result = new List<long>();
        if (_lists.TryGetValue(key, out var versions))
        {
            foreach (var (seq, value) in versions)
            {
                if (seq > at)
                {
                    break;
                }

                result.Add(value);
            }
        }

        return result;
    }

    public long? ReadRegister(long key, long at)
    {
        if (_registers.TryGetValue(key, out var versions))
        {
            for (var i = versions.Count - 1; i >= 0; i--)
            {
                if (versions[i].Seq <= at)
                {
                    return versions[i].Value;
                }
            }
        }

        return null;
    }

    /// <summary>Each register's installed values, oldest first: the order a database's log would give.</summary>
    public Dictionary<long, IReadOnlyList<long>> RegisterOrder() =>
        _registers.ToDictionary(r => r.Key, r => (IReadOnlyList<long>)r.Value.Select(v => v.Value).ToArray());

    /// <summary>True when a write to a key the transaction writes committed after <paramref name="snapshot"/>.</summary>
    public bool WrittenSince(IEnumerable<Mop> writes, long snapshot) =>
        writes.Any(m => (m.IsList ? _lists : _registers).TryGetValue(m.Key, out var v) && v.Count > 0 && v[^1].Seq > snapshot);

    public void Commit(IEnumerable<Mop> writes)
    {
        Seq++;
        foreach (var m in writes)
        {
            var table = m.IsList ? _lists : _registers;
            if (!table.TryGetValue(m.Key, out var versions))
            {
                table[m.Key] = versions = [];
            }

            versions.Add((Seq, m.Value!.Value));
        }
    }

    /// <summary>Runs the micro-operations against the snapshot at <paramref name="at"/>, seeing the transaction's own writes.</summary>
    public Mop[] Execute(IReadOnlyList<Mop> mops, long at)
    {
        var appends = new Dictionary<long, List<long>>();
        var writes = new Dictionary<long, long>();
        var done = new Mop[mops.Count];
        for (var i = 0; i < mops.Count; i++)
        {
            var m = mops[i];
            switch (m.Kind)
            {
                case MopKind.Append:
                    if (!appends.TryGetValue(m.Key, out var own))
                    {
                        appends[m.Key] = own = [];
                    }

                    own.Add(m.Value!.Value);
                    done[i] = m;
                    break;
                case MopKind.ReadList:
                    var list = ReadList(m.Key, at);
                    list.AddRange(appends.GetValueOrDefault(m.Key) ?? []);
                    done[i] = m.WithList(list);
                    break;
                case MopKind.Write:
                    writes[m.Key] = m.Value!.Value;
                    done[i] = m;
                    break;
                default:
                    done[i] = m.WithValue(writes.TryGetValue(m.Key, out var w) ? w : ReadRegister(m.Key, at));
                    break;
            }
        }

        return done;
    }
}
