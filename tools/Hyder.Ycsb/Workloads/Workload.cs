namespace Hyder.Ycsb.Workloads;

/// <summary>
/// A workload: its key spaces and how many records the load phase puts in each, and a source of
/// transactions per worker. Sources of one workload share only the key counters (inserts allocate
/// the next key number), so a run with one worker is fully determined by the seed.
/// </summary>
internal abstract class Workload
{
    private readonly KeyCounter[] _counters;

    protected Workload(IReadOnlyList<KeySpace> keySpaces)
    {
        KeySpaces = keySpaces;
        _counters = keySpaces.Select(s => new KeyCounter(s.InitialRecords)).ToArray();
    }

    /// <summary>The name the <c>--workload</c> option uses.</summary>
    public abstract string Name { get; }

    public IReadOnlyList<KeySpace> KeySpaces { get; }

    /// <summary>One line for the report's header: the mix and its parameters.</summary>
    public abstract string Describe();

    /// <summary>A source for worker <paramref name="worker"/>: its own random stream, its own choosers.</summary>
    public abstract ITransactionSource CreateSource(ulong seed, int worker);

    /// <summary>The number of key numbers handed out so far in a key space (loaded plus inserted).</summary>
    public KeyCounter Keys(int space) => _counters[space];
}

/// <summary>Plans one transaction after another for one worker. Not thread-safe.</summary>
internal interface ITransactionSource
{
    /// <summary>Plans the next transaction; false when the source has no more (workloads never run dry).</summary>
    bool TryNext(TransactionPlan plan);
}

/// <summary>Key numbers of a key space: the records loaded, then one more per insert.</summary>
internal sealed class KeyCounter(long initial)
{
    private long _next = initial;

    /// <summary>Key numbers handed out so far; reads choose below it.</summary>
    public long Count => Volatile.Read(ref _next);

    /// <summary>The next fresh key number for an insert.</summary>
    public long Allocate() => Interlocked.Increment(ref _next) - 1;
}
