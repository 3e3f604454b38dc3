namespace Hyder.Ycsb.Metrics;

/// <summary>Why a transaction attempt did not commit: PostgreSQL's reasons, then Hyder meld's causes.</summary>
internal enum AbortCause
{
    /// <summary>A read no longer matches the committed state (PostgreSQL SQLSTATE 40001; optimistic read validation).</summary>
    Serialization,

    /// <summary>Another transaction wrote the same key first (first-committer-wins).</summary>
    WriteConflict,

    /// <summary>PostgreSQL detected a deadlock (SQLSTATE 40P01).</summary>
    Deadlock,

    /// <summary>The target refused the transaction for another reason it reports as retryable.</summary>
    Other,

    /// <summary>Hyder: a key the transaction read changed in its conflict zone.</summary>
    ReadWrite,

    /// <summary>Hyder: a key the transaction wrote changed in its conflict zone.</summary>
    WriteWrite,

    /// <summary>Hyder: a key in a scanned range was inserted, changed or deleted in the conflict zone.</summary>
    Phantom,

    /// <summary>Hyder: the transaction deleted a key that changed in its conflict zone.</summary>
    DeleteConflict,

    /// <summary>Hyder group meld: the second intention of a pair depends on a key the first wrote.</summary>
    GroupConflict,

    /// <summary>Hyder group meld: both intentions of a pair abort together.</summary>
    FateShared,

    /// <summary>Hyder: the snapshot is further behind than the cluster's state window.</summary>
    SnapshotTooOld,

    /// <summary>Hyder: the snapshot precedes the last checkpoint barrier before the intention.</summary>
    SnapshotBeforeCheckpoint,

    /// <summary>Hyder: every server rejected the intention (it broke the engine's rules).</summary>
    Rejected,

    /// <summary>Hyder: a bounded Add would have left its bounds (escrow).</summary>
    BoundViolated,

    /// <summary>Hyder: a commutative operation met a value of another type.</summary>
    TypeMismatch,

    /// <summary>Hyder: a read or write of a key split in the current phase and changed in it (docs/doppel.md).</summary>
    SplitPhase,

    /// <summary>
    /// Hyder: the server could not learn the outcome (it stopped after appending). Counted with the
    /// aborts, although the transaction may have committed.
    /// </summary>
    Unknown,
}

/// <summary>Names of <see cref="AbortCause"/> in reports.</summary>
internal static class AbortCauses
{
    public static readonly int Count = Enum.GetValues<AbortCause>().Length;

    public static string Name(AbortCause cause) => cause switch
    {
        AbortCause.Serialization => "serialization",
        AbortCause.WriteConflict => "write-conflict",
        AbortCause.Deadlock => "deadlock",
        AbortCause.Other => "other",
        AbortCause.ReadWrite => "read-write",
        AbortCause.WriteWrite => "write-write",
        AbortCause.Phantom => "phantom",
        AbortCause.DeleteConflict => "delete-conflict",
        AbortCause.GroupConflict => "group-conflict",
        AbortCause.FateShared => "fate-shared",
        AbortCause.SnapshotTooOld => "snapshot-too-old",
        AbortCause.SnapshotBeforeCheckpoint => "snapshot-before-checkpoint",
        AbortCause.Rejected => "rejected",
        AbortCause.BoundViolated => "bound-violated",
        AbortCause.TypeMismatch => "type-mismatch",
        AbortCause.SplitPhase => "split-phase",
        AbortCause.Unknown => "unknown-outcome",
        _ => throw new ArgumentOutOfRangeException(nameof(cause), cause, null),
    };
}
