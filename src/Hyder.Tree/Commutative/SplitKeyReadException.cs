namespace Hyder.Tree.Commutative;

/// <summary>
/// A transaction read, scanned over or wrote a key that is split in its snapshot's phase: the
/// snapshot's value and version of it may be behind the side table, so the transaction must run on a reconciled state
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
