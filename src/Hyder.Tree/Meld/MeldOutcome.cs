namespace Hyder.Tree.Meld;

/// <summary>Which check aborted an intention.</summary>
public enum AbortCause : byte
{
    /// <summary>Not aborted.</summary>
    None = 0,

    /// <summary>The transaction wrote a key whose content changed in its conflict zone (SCV ≠ NCV).</summary>
    WriteWrite = 1,

    /// <summary>The transaction read a key whose content changed (or that was deleted) in its conflict zone.</summary>
    ReadWrite = 2,

    /// <summary>A key in a scanned range was inserted, changed or deleted in the conflict zone.</summary>
    Phantom = 3,

    /// <summary>The transaction deleted a key that was changed or deleted in its conflict zone.</summary>
    DeleteConflict = 4,

    /// <summary>The intention broke the engine's invariants and was rejected (the same way on every server).</summary>
    Rejected = 5,

    /// <summary>
    /// Group meld: the second intention of a pair depends on a key the first one wrote (the first is
    /// in its conflict zone), so the second aborts and the first goes on alone (Hyder II §4, Fig. 8).
    /// </summary>
    GroupConflict = 6,

    /// <summary>
    /// Group meld: the two intentions of a pair depend on different versions of one key, so they
    /// cannot both commit; a group commits only whole, so both abort (fate sharing).
    /// </summary>
    FateShared = 7,

    /// <summary>
    /// The transaction's snapshot lies further behind its intention than the cluster's state
    /// window: servers no longer hold the state its intention refers to, so every server aborts it.
    /// </summary>
    SnapshotTooOld = 8,

    /// <summary>
    /// The transaction's snapshot precedes the last checkpoint barrier before its intention: a
    /// server restarted from that checkpoint does not have it, so every server aborts it.
    /// </summary>
    SnapshotBeforeCheckpoint = 9,

    /// <summary>
    /// A bounded Add would leave its [min, max] (or an Add the 64-bit range) at the transaction's
    /// place in the log; exact, because meld applies operations in log order (docs/doppel.md).
    /// </summary>
    BoundViolated = 10,

    /// <summary>
    /// A commutative operation met a value of another type at the transaction's place in the log
    /// (not an 8-byte integer for Add, Max and Min; not an ordered value for OPut; not a top-k list
    /// for TopKInsert).
    /// </summary>
    TypeMismatch = 11,

    /// <summary>
    /// The transaction read, scanned, wrote or deleted a key that is split in the current phase
    /// (Doppel §5) and that commutative operations already changed in it: the tree does not show
    /// that value until the phase's reconciliation, so the transaction must run again on the
    /// reconciled state (docs/doppel.md, "Split phases"). Retryable.
    /// </summary>
    SplitPhase = 12,
}

/// <summary>What one meld decided and what it cost.</summary>
public struct MeldOutcome
{
    /// <summary>True when the intention committed.</summary>
    public bool Committed;

    /// <summary>The check that fired, when aborted.</summary>
    public AbortCause Cause;

    /// <summary>The key the check fired on, when aborted.</summary>
    public byte[]? ConflictKey;

    /// <summary>Why the intention was rejected, when <see cref="Cause"/> is <see cref="AbortCause.Rejected"/>.</summary>
    public string? RejectReason;

    /// <summary>Intention nodes meld visited.</summary>
    public int IntentionNodesVisited;

    /// <summary>Last-committed-state nodes meld visited.</summary>
    public int StateNodesVisited;

    /// <summary>Ephemeral nodes created (kept when committed).</summary>
    public int EphemeralNodesCreated;

    /// <summary>Keys whose operation lists final meld applied (docs/doppel.md).</summary>
    public int OperationNodes;

    /// <summary>Intentions between the snapshot and this intention.</summary>
    public long ConflictZoneLength;

    /// <summary>Operations on split keys only: staged in the side table, the state not walked.</summary>
    public bool StagedOnly;

    /// <summary>True when the intention was serial (empty conflict zone): its root became the state.</summary>
    public bool Serial;

    /// <summary>True when the decision is a group intention's: it holds for both intentions of the pair.</summary>
    public bool Grouped;

    /// <summary>Nodes visited in total: the papers' measure of meld's work.</summary>
    public readonly int NodesVisited => IntentionNodesVisited + StateNodesVisited;

    /// <inheritdoc/>
    public override readonly string ToString() => Committed
        ? $"committed (zone {ConflictZoneLength}, visited {NodesVisited}, ephemeral {EphemeralNodesCreated})"
        : Cause == AbortCause.Rejected ? $"rejected: {RejectReason}"
        : $"aborted: {Cause} on {(ConflictKey is null ? "?" : Keys.Format(ConflictKey))} (zone {ConflictZoneLength})";
}

/// <summary>Running totals a stage reports (benchmarks, metrics).</summary>
public sealed class MeldCounters
{
    /// <summary>Melds run.</summary>
    public long Melds;

    /// <summary>Melds that committed.</summary>
    public long Commits;

    /// <summary>Aborts by cause (indexed by <see cref="AbortCause"/>).</summary>
    public readonly long[] AbortsByCause = new long[(int)AbortCause.SplitPhase + 1];

    /// <summary>Intention nodes visited.</summary>
    public long IntentionNodesVisited;

    /// <summary>State nodes visited.</summary>
    public long StateNodesVisited;

    /// <summary>Ephemeral nodes created.</summary>
    public long EphemeralNodesCreated;

    /// <summary>Keys whose operation lists final meld applied.</summary>
    public long OperationNodes;

    /// <summary>Sum of conflict-zone lengths.</summary>
    public long ConflictZoneTotal;

    /// <summary>Serial intentions (fast path).</summary>
    public long Serial;

    /// <summary>Intentions of operations on split keys only, staged without walking the state (Doppel §5).</summary>
    public long StagedOnly;

    /// <summary>Adds one meld's figures.</summary>
    public void Add(in MeldOutcome o)
    {
        Melds++;
        if (o.Committed)
        {
            Commits++;
        }
        else
        {
            AbortsByCause[(int)o.Cause]++;
        }

        IntentionNodesVisited += o.IntentionNodesVisited;
        StateNodesVisited += o.StateNodesVisited;
        EphemeralNodesCreated += o.EphemeralNodesCreated;
        OperationNodes += o.OperationNodes;
        ConflictZoneTotal += o.ConflictZoneLength;
        if (o.Serial)
        {
            Serial++;
        }

        if (o.StagedOnly)
        {
            StagedOnly++;
        }
    }

    /// <summary>Sets every total back to zero.</summary>
    public void Reset()
    {
        Melds = Commits = IntentionNodesVisited = StateNodesVisited = EphemeralNodesCreated = OperationNodes = ConflictZoneTotal = Serial = StagedOnly = 0;
        Array.Clear(AbortsByCause);
    }
}
