using Hyder.Checker;

namespace Hyder.Soak.Workload;

/// <summary>
/// Which retired lists may be deleted: counts, per list, the generated transactions in flight that
/// name it, notes a list as retired when a transaction carries its last append (the value
/// <c>maxWritesPerKey</c>, after which the generator never names it again), and queues a retired
/// list for its delete once no transaction that names it is in flight. Not thread-safe: the
/// workload calls it under its gate.
/// </summary>
internal sealed class RetiredLists(int maxWritesPerKey)
{
    private readonly Dictionary<long, int> _inFlight = [];
    private readonly HashSet<long> _retired = [];
    private readonly Queue<long> _ready = new();

    /// <summary>Retired lists not deleted yet: still in use, or queued.</summary>
    public int Pending => _retired.Count + _ready.Count;

    /// <summary>A generated transaction starts.</summary>
    public void Began(IEnumerable<Mop> mops)
    {
        var list = mops.ToArray();
        foreach (var key in list.Select(m => m.Key).Distinct())
        {
            _inFlight[key] = _inFlight.GetValueOrDefault(key) + 1;
        }

        foreach (var mop in list.Where(m => m.Kind == MopKind.Append && m.Value == maxWritesPerKey))
        {
            _retired.Add(mop.Key);
        }
    }

    /// <summary>A transaction <see cref="Began"/> ended (whatever its outcome).</summary>
    public void Ended(IEnumerable<Mop> mops)
    {
        foreach (var key in mops.Select(m => m.Key).Distinct())
        {
            var left = _inFlight[key] - 1;
            if (left > 0)
            {
                _inFlight[key] = left;
                continue;
            }

            _inFlight.Remove(key);
            if (_retired.Remove(key))
            {
                _ready.Enqueue(key);
            }
        }
    }

    /// <summary>The next list to delete, if any.</summary>
    public bool TryTake(out long key) => _ready.TryDequeue(out key);

    /// <summary>Queues again a list whose delete did not commit.</summary>
    public void Again(long key) => _ready.Enqueue(key);
}
