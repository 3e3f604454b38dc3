namespace Hyder.Tree.Commutative;

/// <summary>
/// The keys split in one phase (Doppel §5; docs/doppel.md, "Split phases"), sorted, immutable: a
/// state published inside the phase carries it (<see cref="DatabaseState.SplitKeys"/>), so an
/// executor knows which of the state's values may be behind the side table.
/// </summary>
public sealed class SplitKeySet
{
    private readonly byte[][] _keys;

    /// <summary>The set of <paramref name="keys"/> (distinct; any order).</summary>
    public SplitKeySet(IEnumerable<byte[]> keys)
    {
        ArgumentNullException.ThrowIfNull(keys);
        _keys = [.. keys];
        Array.Sort(_keys, Keys.Comparer);
        for (var i = 1; i < _keys.Length; i++)
        {
            if (Keys.Compare(_keys[i - 1], _keys[i]) == 0)
            {
                throw new ArgumentException($"split key {Keys.Format(_keys[i])} given twice", nameof(keys));
            }
        }
    }

    /// <summary>The keys in ascending order.</summary>
    public IReadOnlyList<byte[]> Items => _keys;

    /// <summary>How many keys are split.</summary>
    public int Count => _keys.Length;

    /// <summary>True when <paramref name="key"/> is split.</summary>
    public bool Contains(byte[] key) => Array.BinarySearch(_keys, key, Keys.Comparer) >= 0;

    /// <summary>True when some split key lies in <paramref name="range"/>.</summary>
    public bool Intersects(in KeyRange range)
    {
        foreach (var k in _keys)
        {
            if (range.Contains(k))
            {
                return true;
            }
        }

        return false;
    }

    /// <inheritdoc/>
    public override string ToString() => $"{_keys.Length} split key{(_keys.Length == 1 ? "" : "s")}";
}

/// <summary>
/// A transaction read (or scanned over) a key that is split in its snapshot's phase: the snapshot's
/// value of it may be behind the side table, so the transaction must run on a reconciled state
/// instead (Doppel's stash, 002 §5). Executors catch it, wait for the next reconciliation
/// (<see cref="Database.WhenReconciledAfter"/>) and run the transaction again there.
/// </summary>
public sealed class SplitKeyReadException(byte[] key, long snapshotSequence)
    : InvalidOperationException($"key {Hyder.Tree.Keys.Format(key)} is split in the phase of state #{snapshotSequence}: run the transaction on a reconciled state")
{
    /// <summary>The split key read.</summary>
    public byte[] Key { get; } = key;

    /// <summary>The snapshot the read was made on.</summary>
    public long SnapshotSequence { get; } = snapshotSequence;
}

/// <summary>
/// Doppel's split phases as <see cref="Database"/> drives them (docs/doppel.md, "Split phases"): the
/// side table (<see cref="ISplitTable"/>) plus the phase rule. After each ordinal is decided,
/// the database asks whether the phase ends there; if so it merges the returned values into the
/// tree (one path copy per key, <see cref="Meld.MeldOperator.Reconcile"/>) and publishes the
/// result as a reconciled state. Everything here must depend only on the log.
/// </summary>
public interface ISplitPhases : ISplitTable
{
    /// <summary>The keys split in the running phase; null when none is.</summary>
    SplitKeySet? SplitKeys { get; }

    /// <summary>
    /// True when the phase ends once <paramref name="ordinal"/> is decided: by the ordinal rule, or
    /// always at a committed no-op (<paramref name="noOp"/>: a filler or a checkpoint marker, so a
    /// checkpoint is always taken on a reconciled state).
    /// </summary>
    bool EndsPhase(long ordinal, bool noOp);

    /// <summary>
    /// Ends the phase at <paramref name="ordinal"/>: returns the changed keys' values, sorted by
    /// key, for the tree; empties the table and chooses the next phase's split keys.
    /// </summary>
    IReadOnlyList<KeyValuePair<byte[], byte[]>> EndPhase(long ordinal);
}
