namespace Hyder.Tree.Serialization;

/// <summary>
/// What an intention's final block says before any node is decoded: enough to fetch the parts
/// and pick the snapshot state. A value: every server reads one per intention in the log.
/// </summary>
/// <param name="Nonce">The encoding's random 64-bit value, carried by every block.</param>
/// <param name="PartPositions">Log positions of the non-final blocks, in order.</param>
/// <param name="SnapshotSequence">The snapshot's sequence s: decode against S(s).</param>
/// <param name="Isolation">The transaction's isolation level.</param>
/// <param name="NodeCount">Nodes inside the intention.</param>
public readonly record struct IntentionHeader(long Nonce, IReadOnlyList<long> PartPositions, long SnapshotSequence, IsolationLevel Isolation, int NodeCount);
