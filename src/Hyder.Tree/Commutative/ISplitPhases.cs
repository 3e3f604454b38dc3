namespace Hyder.Tree.Commutative;

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
