
using Hyder.Tree.Commutative;

namespace Hyder.Tree.Tests.Oracle;

/// <summary>What a transaction did, in logical terms, independent of the intention meld sees.</summary>
internal sealed class TransactionRecord
{
    public TransactionRecord(IsolationLevel isolation, long snapshot)
    {
        Isolation = isolation;
        Snapshot = snapshot;
    }

    public IsolationLevel Isolation { get; }

    /// <summary>Sequence of the snapshot state.</summary>
    public long Snapshot { get; }

    /// <summary>Keys whose snapshot value the transaction read (present keys, not its own writes).</summary>
    public HashSet<byte[]> Reads { get; } = new(ByteArrayComparer.Instance);

    /// <summary>Keys the transaction found absent in its snapshot (gets and deletes that missed).</summary>
    public HashSet<byte[]> AbsentReads { get; } = new(ByteArrayComparer.Instance);

    /// <summary>Ranges the transaction scanned (as far as it read them).</summary>
    public List<KeyRange> Ranges { get; } = [];

    /// <summary>Net writes: final value per key written (null = deleted).</summary>
    public SortedDictionary<byte[], byte[]?> Writes { get; } = new(Keys.Comparer);

    /// <summary>Keys present in the snapshot among those written.</summary>
    public HashSet<byte[]> WrittenExisted { get; } = new(ByteArrayComparer.Instance);

    /// <summary>
    /// Keys whose first change by the transaction was a commutative operation: everything it then
    /// did to them, in order (ordinary writes as Put and Clear). Applied at commit to the value the
    /// key has at the transaction's place in the log (docs/doppel.md).
    /// </summary>
    public Dictionary<byte[], List<Operation>> Operations { get; } = new(ByteArrayComparer.Instance);

    /// <summary>An operation failed on a value the transaction knew (its own write): it aborts wherever it lands.</summary>
    public bool Doomed => DoomedKeys.Count > 0;

    /// <summary>
    /// Keys where that happened: the transaction keeps the failed operation over the value it knew,
    /// as a write (checked below read committed) that meld aborts.
    /// </summary>
    public HashSet<byte[]> DoomedKeys { get; } = new(ByteArrayComparer.Instance);

    public bool HasRangeReads => Ranges.Count > 0;

    /// <summary>
    /// For <see cref="DefinitionOracle"/>, at every level: keys whose snapshot value or absence the
    /// transaction observed (a get, an insert's or a delete's answer, a scanned key, a
    /// read-modify-write's read), leaving out keys it had written itself by then.
    /// </summary>
    public HashSet<byte[]> Observed { get; } = new(ByteArrayComparer.Instance);

    /// <summary>For <see cref="DefinitionOracle"/>: each range a scan covered, with the keys in it the transaction had written itself by then.</summary>
    public List<(KeyRange Range, HashSet<byte[]> Own)> ObservedRanges { get; } = [];

    /// <summary>The transaction only flushed (copied paths, meld paper §5): it observed and wrote nothing.</summary>
    public bool FlushOnly { get; set; }

    /// <summary>True when the operations on <paramref name="key"/> include an ordinary write (a checked write below read committed).</summary>
    public bool WritesAfterOperations(byte[] key) => Operations.TryGetValue(key, out var list) && list.Any(o => o.IsWrite);
}

/// <summary>Content equality for byte-array keys.</summary>
internal sealed class ByteArrayComparer : IEqualityComparer<byte[]>
{
    public static readonly ByteArrayComparer Instance = new();

    public bool Equals(byte[]? x, byte[]? y) => x.AsSpan().SequenceEqual(y);

    public int GetHashCode(byte[] obj)
    {
        var h = new HashCode();
        h.AddBytes(obj);
        return h.ToHashCode();
    }
}
