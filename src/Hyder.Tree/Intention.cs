using System.Buffers;

namespace Hyder.Tree;

/// <summary>
/// A transaction's intention: the copy-on-write tree of every node it wrote, read (at serializable
/// and repeatable read) or copied on a path to those, its delete list, and the snapshot it ran on
/// (meld paper §3, Appendix E; Hyder II §2).
/// </summary>
/// <remarks>
/// Nodes inside the intention have <see cref="Node.Owner"/> equal to <see cref="Ordinal"/> once
/// sealed; every other pointer leads outside, into the snapshot. The snapshot's state stays pinned
/// until the intention has been melded, because meld may read through those pointers.
/// </remarks>
public sealed class Intention
{
    internal Intention(Node? root, DatabaseState snapshot, IsolationLevel isolation, DeleteEntry[] deletes, KeyRange[] rootRanges, int nodeCount)
    {
        Root = root;
        Snapshot = snapshot;
        PhantomBase = snapshot;
        Isolation = isolation;
        Deletes = deletes;
        RootRanges = rootRanges;
        NodeCount = nodeCount;
    }

    private Node[]? _sealOrder;
    private int _sealOrderCount;

    /// <summary>The token the executor marked this intention's nodes with until it is sealed.</summary>
    internal long ExecutorToken { get; init; }

    /// <summary>
    /// The nodes the executor's transaction made, in the order it made them (each path root
    /// first): a prefetch list for validating the intention, which may name nodes the
    /// transaction dropped again. Hints only; nothing reads a node through it.
    /// </summary>
    internal ReadOnlyMemory<Node> MadeNodes { get; set; }

    /// <summary>The root of the intention's tree (null when the transaction emptied the database).</summary>
    public Node? Root { get; internal set; }

    /// <summary>The state the transaction ran on.</summary>
    public DatabaseState Snapshot { get; }

    /// <summary>
    /// The state the transaction actually read: what phantom checks compare against. The snapshot
    /// itself, except after premeld, which moves <see cref="Snapshot"/> to its input but keeps this.
    /// </summary>
    public DatabaseState PhantomBase { get; private init; }

    /// <summary>The snapshot's sequence: the ordinal of the last intention it includes.</summary>
    public long SnapshotSequence => Snapshot.Sequence;

    /// <summary>
    /// The newest state any part of the intention ran on: <see cref="SnapshotSequence"/>, or for a
    /// group intention the later of its two parts' snapshots. Meld needs a state at least this new.
    /// </summary>
    public long LatestSnapshotSequence => SecondSnapshot is { } s && s.Sequence > Snapshot.Sequence ? s.Sequence : Snapshot.Sequence;

    /// <summary>
    /// The oldest state any part ran on: the start of the conflict zone (Hyder II §4: group meld
    /// does not shorten it).
    /// </summary>
    public long OldestSnapshotSequence => SecondSnapshot is { } s && s.Sequence < Snapshot.Sequence ? s.Sequence : Snapshot.Sequence;

    /// <summary>True for a group intention: two adjacent intentions melded into one (Hyder II §4).</summary>
    public bool IsGroup => SecondSnapshot is not null;

    /// <summary>
    /// The first ordinal the intention covers: <see cref="Ordinal"/>, or for a group intention
    /// the ordinal of its first part (the second part's ordinal is <see cref="Ordinal"/>).
    /// </summary>
    public long FirstOrdinal { get; private set; }

    /// <summary>For a group intention, the state its second part ran on (kept pinned until meld); else null.</summary>
    public DatabaseState? SecondSnapshot { get; private init; }

    /// <summary>For a group intention, what the second part's ranges are checked against; else null.</summary>
    public DatabaseState? SecondPhantomBase { get; private init; }

    /// <summary>
    /// For a group intention, the second part's scanned ranges: judged against
    /// <see cref="SecondPhantomBase"/>, where <see cref="RootRanges"/> and the ranges on nodes are
    /// judged against <see cref="PhantomBase"/>. Empty otherwise.
    /// </summary>
    public KeyRange[] SecondRootRanges { get; private init; } = [];

    /// <summary>The isolation level the transaction ran at.</summary>
    public IsolationLevel Isolation { get; }

    /// <summary>Keys deleted, sorted ordinally, unique.</summary>
    public DeleteEntry[] Deletes { get; }

    /// <summary>Scanned ranges with no node to carry them (the transaction saw an empty tree).</summary>
    public KeyRange[] RootRanges { get; }

    /// <summary>Nodes inside the intention.</summary>
    public int NodeCount { get; private set; }

    /// <summary>The intention's number in the log, counting every intention (≥ 1), once appended.</summary>
    public long Ordinal { get; private set; }

    /// <summary>The intention's log position (of its last block), once appended.</summary>
    public long Position { get; private set; }

    /// <summary>True once <see cref="Seal"/> gave the nodes their versions.</summary>
    public bool IsSealed => Ordinal != 0;

    /// <summary>
    /// True when premeld left checks to final meld (an insert of a key its input held, a key new in
    /// a scanned range): final meld must not take the serial shortcut for it.
    /// </summary>
    public bool HasDeferredChecks { get; private init; }

    /// <summary>
    /// True when some node carries operations (<see cref="NodeFlags.Operations"/>): final meld must
    /// apply them, so it never takes the serial shortcut for such an intention (docs/doppel.md).
    /// </summary>
    public bool HasOperations { get; internal init; }

    /// <summary>True once <see cref="IntentionValidator"/> accepted it (premeld outputs count as checked).</summary>
    public bool IsValidated { get; internal set; }

    /// <summary>True when premeld produced this intention from the transaction's own.</summary>
    public bool IsPremelded { get; private init; }

    /// <summary>The premeld output: this intention re-based on <paramref name="input"/> (same ordinal and position).</summary>
    internal Intention Premelded(Node? root, DatabaseState input, KeyRange[] rootRanges, bool deferred) =>
        new(root, input, Isolation, Deletes, rootRanges, NodeCount)
        {
            Ordinal = Ordinal,
            FirstOrdinal = FirstOrdinal,
            Position = Position,
            ExecutorToken = ExecutorToken,
            IsPremelded = true,
            IsValidated = true,
            HasOperations = HasOperations,
            PhantomBase = PhantomBase,
            HasDeferredChecks = deferred,
            SecondSnapshot = SecondSnapshot,
            SecondPhantomBase = SecondPhantomBase,
            SecondRootRanges = SecondRootRanges,
        };

    /// <summary>
    /// The group intention of <paramref name="first"/> and <paramref name="second"/> (adjacent,
    /// neither a group): it takes over both parts' pins. Never serial: its tree mixes two bases.
    /// </summary>
    internal static Intention Grouped(
        Intention first, Intention second, Node? root, DeleteEntry[] deletes, KeyRange[] rootRanges, KeyRange[] secondRootRanges) =>
        new(root, first.Snapshot, first.Isolation, deletes, rootRanges, first.NodeCount + second.NodeCount)
        {
            Ordinal = second.Ordinal,
            FirstOrdinal = first.Ordinal,
            Position = second.Position,
            IsPremelded = first.IsPremelded || second.IsPremelded,
            IsValidated = true,
            HasOperations = first.HasOperations || second.HasOperations,
            PhantomBase = first.PhantomBase,
            HasDeferredChecks = true,
            SecondSnapshot = second.Snapshot,
            SecondPhantomBase = second.PhantomBase,
            SecondRootRanges = secondRootRanges,
        };

    /// <summary>
    /// Releases every state this intention holds pinned: its snapshot, its phantom base when
    /// premeld moved the snapshot, and a group's second part's two. Called once, when the
    /// intention is melded or aborted.
    /// </summary>
    internal void ReleasePins()
    {
        Snapshot.Unpin();
        if (PhantomBase != Snapshot)
        {
            PhantomBase.Unpin();
        }

        if (SecondSnapshot is { } second)
        {
            second.Unpin();
            if (SecondPhantomBase != second)
            {
                SecondPhantomBase!.Unpin();
            }
        }
    }

    /// <summary>True when <paramref name="node"/> belongs to this intention (to either part of a group).</summary>
    public bool Contains(Node node) => node.Owner >= FirstOrdinal && node.Owner <= Ordinal;

    /// <summary>
    /// Fixes the intention at its log position: every inside node gets
    /// VN = (position, post-order index) and Owner = ordinal (meld paper App. E; DESIGN §2).
    /// </summary>
    /// <param name="ordinal">The intention's number in the log.</param>
    /// <param name="position">The intention's log position.</param>
    internal void Seal(long ordinal, long position)
    {
        if (IsSealed)
        {
            ThrowHelper.ThrowInvalidOperation("the intention is already sealed");
        }

        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(ordinal);
        var index = 0;
        if (_sealOrder is { } order)
        {
            SealInOrder(order, _sealOrderCount, ordinal, position, ExecutorToken);
            index = _sealOrderCount;

            // The list stays: final meld recycles the nodes from it (TakeInsideNodes).
            Invariant.Assert(!HasUnsealedNode(Root, ExecutorToken, ordinal), $"the seal order of {this} missed an inside node");
        }
        else
        {
            SealSubtree(Root, ordinal, position, ExecutorToken, ref index);
        }

        NodeCount = index;
        Ordinal = ordinal;
        FirstOrdinal = ordinal;
        Position = position;
    }

    /// <summary>
    /// Keeps the post-order list of the inside nodes (<paramref name="nodes"/>: the encoder's, which
    /// it numbered as <see cref="Seal"/> will, or the decoder's, in the order the blocks list them)
    /// for the seal and for final meld's recycling: both then walk that array instead of the tree. The recursive walk reads every outside child too, to see that it is outside; those
    /// are nodes of the snapshot's tree, cold in this core's cache, about as many as the inside
    /// nodes, and for a local intention the seal runs on the server's log reader or submitter,
    /// away from the executor that built them.
    /// </summary>
    internal void KeepSealOrder(ReadOnlySpan<Node> nodes)
    {
        if (IsSealed)
        {
            return;
        }

        DropSealOrder();
        var order = ArrayPool<Node>.Shared.Rent(Math.Max(nodes.Length, 1));
        nodes.CopyTo(order);
        _sealOrderCount = nodes.Length;
        _sealOrder = order;
    }

    /// <summary>
    /// True when the encoder's post-order list of the inside nodes, which the seal walked and left
    /// in place, is here to hand over (<see cref="TakeInsideNodes"/>): a local intention that
    /// premeld and group meld did not replace. Final meld recycles from it without reading the
    /// outside children (MeldOperator.Apply). The caller gives the array back with
    /// <see cref="ReturnInsideNodes"/>.
    /// </summary>
    internal bool HasInsideNodes => _sealOrder is not null && IsSealed;

    /// <summary>
    /// Hints the inside nodes of the list <see cref="HasInsideNodes"/> names into this core's cache,
    /// root first: final meld is about to walk them, and they were written on other threads (the
    /// executor, or a deserializer). The addresses come from an array, not from the nodes, so the
    /// misses overlap instead of following each other down the tree.
    /// </summary>
    internal void PrefetchInsideNodes()
    {
        if (!HasInsideNodes)
        {
            return;
        }

        // Post-order: the root is last.
        for (var i = _sealOrderCount - 1; i >= 0; i--)
        {
            Memory.CacheHints.Prefetch(_sealOrder![i]);
        }
    }

    /// <summary>
    /// Hints <see cref="MadeNodes"/> into this core's cache and drops the list: the nodes first, then
    /// what the walks after them read next (the snapshot's nodes below them, which validation
    /// visits, and their keys, which the encoder copies). The executor made these nodes over all of
    /// its transaction's operations, so the early ones have left the cache by commit; from the
    /// list the misses overlap, where a walk would meet them one at a time.
    /// </summary>
    internal void PrefetchMadeNodes()
    {
        var made = MadeNodes.Span;
        MadeNodes = default;
        foreach (var n in made)
        {
            if (n is not null)
            {
                Memory.CacheHints.Prefetch(n);
            }
        }

        foreach (var n in made)
        {
            if (n is null)
            {
                continue;
            }

            Memory.CacheHints.Prefetch(n.Key);
            if (n.Left is { } left)
            {
                Memory.CacheHints.Prefetch(left);
            }

            if (n.Right is { } right)
            {
                Memory.CacheHints.Prefetch(right);
            }
        }
    }

    /// <summary>Hands over the list <see cref="HasInsideNodes"/> names, when there is one.</summary>
    internal bool TakeInsideNodes(out Node[] nodes, out int count)
    {
        if (_sealOrder is { } order && IsSealed)
        {
            _sealOrder = null;
            nodes = order;
            count = _sealOrderCount;
            return true;
        }

        nodes = [];
        count = 0;
        return false;
    }

    /// <summary>Gives back an array <see cref="TakeInsideNodes"/> handed out, cleared (only the part in use holds nodes: the pool's array may be longer).</summary>
    internal static void ReturnInsideNodes(Node[] nodes, int count)
    {
        Array.Clear(nodes, 0, count);
        ArrayPool<Node>.Shared.Return(nodes);
    }

    /// <summary>
    /// Gives the inside-node list's array back to the pool: for an intention consumed without it
    /// (premeld, group meld), or encoded and never melded.
    /// </summary>
    internal void DropSealOrder()
    {
        if (_sealOrder is { } order)
        {
            _sealOrder = null;
            ReturnInsideNodes(order, _sealOrderCount);
        }
    }

    private static void SealInOrder(Node[] order, int count, long ordinal, long position, long token)
    {
        for (var i = 0; i < count; i++)
        {
            var n = order[i];
            Invariant.Assert(n.Owner == token, $"node {i} of the seal order is not the executor's (owner {n.Owner}, token {token})");
            n.Vn = NodeVersion.Persistent(position, i);
            n.Owner = ordinal;
        }
    }

    private static void SealSubtree(Node? n, long ordinal, long position, long token, ref int index)
    {
        if (n is null || n.Owner != token)
        {
            return;
        }

        SealSubtree(n.Left, ordinal, position, token, ref index);
        SealSubtree(n.Right, ordinal, position, token, ref index);
        n.Vn = NodeVersion.Persistent(position, index++);
        n.Owner = ordinal;
    }

    /// <summary>True when a node under <paramref name="n"/> reachable through sealed inside nodes still carries the token (Debug check).</summary>
    private static bool HasUnsealedNode(Node? n, long token, long ordinal) =>
        n is not null && (n.Owner == token || (n.Owner == ordinal && (HasUnsealedNode(n.Left, token, ordinal) || HasUnsealedNode(n.Right, token, ordinal))));

    /// <inheritdoc/>
    public override string ToString() =>
        IsGroup
            ? $"group intention #{FirstOrdinal}+#{Ordinal} @{Position} on #{SnapshotSequence}/#{SecondSnapshot!.Sequence} ({NodeCount} nodes, {Deletes.Length} deletes)"
            : $"intention #{Ordinal} @{Position} on #{SnapshotSequence} ({Isolation}, {NodeCount} nodes, {Deletes.Length} deletes)";
}
