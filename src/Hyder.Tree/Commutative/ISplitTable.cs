namespace Hyder.Tree.Commutative;

/// <summary>What a <see cref="ISplitTable"/> did with a key's operations.</summary>
public enum SplitStatus : byte
{
    /// <summary>The key is not split: final meld applies the operations to the tree.</summary>
    NotSplit = 0,

    /// <summary>The table staged the operations; the tree's node for the key stays as it is.</summary>
    Staged = 1,

    /// <summary>A bounded Add would leave its bounds against the table's value: the intention aborts.</summary>
    BoundViolated = 2,

    /// <summary>An operation does not apply to the table's value: the intention aborts.</summary>
    TypeMismatch = 3,
}

/// <summary>
/// Doppel's split phase as final meld sees it (002 §5; docs/doppel.md, "Split phases"): a per-key
/// side table that final meld hands the operations of split keys to, instead of copying the path
/// to the key. Only final meld with <see cref="Meld.MeldOperator.Apply"/> consults it; premeld and
/// group meld carry operations unchanged. The table must be deterministic: every server stages the
/// same operations in the same order and so reaches the same table.
/// </summary>
/// <remarks>
/// Final meld first checks the intention against <see cref="ChangedKeys"/>: a transaction that
/// read, scanned, wrote or deleted such a key aborts (<see cref="Meld.AbortCause.SplitPhase"/>),
/// since the tree does not show the key's value. Then it calls <see cref="Stage"/> for each key
/// with operations, in key order within an intention and in log order across intentions, before
/// it knows whether the intention commits; then exactly one of <see cref="Commit"/> (the intention
/// committed) or <see cref="Abort"/>.
/// </remarks>
public interface ISplitTable
{
    /// <summary>
    /// Offers the operations on <paramref name="key"/> of intention <paramref name="ordinal"/> (an
    /// operation list, docs/doppel.md); <paramref name="current"/> is the key's value in the state
    /// (null: absent), which is exact for a key the table has not changed in this phase.
    /// </summary>
    SplitStatus Stage(byte[] key, ReadOnlySpan<byte> operations, byte[]? current, long ordinal);

    /// <summary>The intention whose operations were staged since the last call committed: keep them.</summary>
    void Commit(long ordinal);

    /// <summary>The intention aborted (or was rejected): drop what it staged.</summary>
    void Abort(long ordinal);

    /// <summary>True when <paramref name="key"/> is split in the running phase (its operations go to the table).</summary>
    bool IsSplit(byte[] key);

    /// <summary>True when <paramref name="key"/> is one of <see cref="ChangedKeys"/>: the table does not need the tree's value of it.</summary>
    bool IsChanged(byte[] key);

    /// <summary>
    /// The keys whose value in the table differs from the tree's, because committed operations
    /// were staged on them in this phase (any order). Empty most of the time between phases.
    /// </summary>
    IReadOnlyList<byte[]> ChangedKeys { get; }
}
