using System.Runtime.CompilerServices;
using Hyder.Tree.Memory;

namespace Hyder.Tree.Meld;

/// <summary>
/// The meld operator (meld paper §3-§7, Appendix C, completed as docs/meld.md describes): decides
/// whether an intention commits against the last committed state and, if so, merges it into a new
/// state. One instance belongs to one stage thread: it allocates ephemeral nodes from that thread's
/// pool and numbers them with that thread's configured id, so every server makes the same nodes
/// with the same ids.
/// </summary>
/// <remarks>
/// Not thread-safe by design: no locks or interlocked operations on this path.
/// </remarks>
public sealed partial class MeldOperator
{
    private readonly NodePool _pool;
    private readonly byte _threadId;
    private long _sequence;
    private long _sequenceAtStart;
    private readonly NodeList _fresh = new(256);
    private NodeList _displaced = new(256);

    /// <summary>Displaced state nodes of the meld in progress whose pooled payloads die with them.</summary>
    private readonly NodeList _dying = new(64);
    private readonly Stack<NodeList> _spareLists = new();

    private Intention _intention = null!;
    private DatabaseState? _state;
    private DatabaseState _phantomBase = null!;
    private long _ownerLow;
    private long _ownerHigh;
    private bool _apply;
    private bool _intentionMode;

    /// <summary>
    /// Premeld and group meld (set by <see cref="Begin"/>; group meld clears
    /// <see cref="_intentionMode"/> before it marks its output's root, this stays): the output is
    /// an intention, and the recursion marks the input nodes it places (<see cref="MarkGrafted"/>).
    /// Final meld marks only what publishing keeps.
    /// </summary>
    private bool _outputIsIntention;
    private bool _decideOnly;
    private bool _deferred;
    private readonly List<KeyRange> _movedRanges = [];
    private MeldOutcome _outcome;

    /// <summary>Creates the operator of one stage thread.</summary>
    /// <param name="threadId">The stage thread's id, fixed by configuration (part of every ephemeral id).</param>
    /// <param name="pool">The stage thread's node pool.</param>
    /// <param name="firstSequence">The thread's next ephemeral sequence number (non-zero after recovery).</param>
    public MeldOperator(byte threadId, NodePool pool, long firstSequence = 0)
    {
        _threadId = threadId;
        _pool = pool;
        _sequence = firstSequence;
    }

    /// <summary>Running totals over every meld this operator ran.</summary>
    public MeldCounters Counters { get; } = new();

    /// <summary>The stage thread's node pool.</summary>
    public NodePool Pool => _pool;

    /// <summary>The stage thread id in this operator's ephemeral ids.</summary>
    public byte ThreadId => _threadId;

    /// <summary>The sequence number the next ephemeral node will get.</summary>
    public long NextEphemeralSequence => _sequence;

    /// <summary>
    /// Melds <paramref name="intention"/> into <paramref name="lcs"/>, the last committed state.
    /// </summary>
    /// <param name="intention">A sealed intention whose snapshot is <paramref name="lcs"/> or older.</param>
    /// <param name="lcs">The last committed state.</param>
    /// <param name="newRoot">The new state's root when committed; <c>lcs.Root</c> otherwise.</param>
    /// <param name="displaced">
    /// When committed, the state nodes the new state no longer reaches (the caller retires them
    /// until every older state is released); the operator starts a new list for its next meld.
    /// </param>
    /// <remarks>
    /// On commit the intention's nodes that did not become part of the new state go back to the
    /// pool; on abort all of them do, and so do the ephemeral nodes made on the way. The intention
    /// must not be used afterwards.
    /// </remarks>
    public MeldOutcome Apply(Intention intention, DatabaseState lcs, out Node? newRoot, out NodeList? displaced)
    {
        _recycleFromList = intention.HasInsideNodes;
        Run(intention, lcs, apply: true, intentionMode: false, out newRoot);
        if (_outcome.Committed)
        {
            AssertOutput(newRoot, state: true);
            MarkDyingPayloads();
            RecycleIntention(intention, newRoot, committed: true);
            _fresh.Clear();
            displaced = _displaced;
            _displaced = _spareLists.Count > 0 ? _spareLists.Pop() : new NodeList(256);
        }
        else
        {
            RecycleIntention(intention, newRoot, committed: false);
            _fresh.ReturnAllTo(_pool);
            _displaced.Clear();
            _sequence = _sequenceAtStart;
            displaced = null;
        }

        Counters.Add(_outcome);
        return _outcome;
    }

    /// <summary>Gives back a displaced-node list handed out by <see cref="Apply"/>, emptied, for reuse.</summary>
    public void ReturnList(NodeList list)
    {
        if (list.Count != 0)
        {
            ThrowHelper.ThrowInvalidOperation("a displaced-node list must be emptied before it is handed back");
        }

        _spareLists.Push(list);
    }

    /// <summary>
    /// Runs meld without publishing anything: the decision and its costs, with the result thrown
    /// away and its ephemeral nodes recycled. The intention and the state are left untouched, so
    /// the same intention can be melded again (benchmarks, premeld-equivalence tests).
    /// </summary>
    public MeldOutcome Trial(Intention intention, DatabaseState lcs)
    {
        Run(intention, lcs, apply: false, intentionMode: false, out _);
        _fresh.ReturnAllTo(_pool);
        _displaced.Clear();
        _sequence = _sequenceAtStart;
        Counters.Add(_outcome);
        return _outcome;
    }

    /// <summary>
    /// Decides whether the intention commits, building nothing: the whole recursion in the paper's
    /// <c>MeldNoEphem</c> mode. Same decision as <see cref="Apply"/>; the fair counterpart of the
    /// brute-force validator, which decides only too.
    /// </summary>
    public MeldOutcome Decide(Intention intention, DatabaseState lcs)
    {
        _decideOnly = true;
        try
        {
            Run(intention, lcs, apply: false, intentionMode: false, out _);
        }
        finally
        {
            _decideOnly = false;
        }

        Counters.Add(_outcome);
        return _outcome;
    }

    /// <summary>
    /// Premeld (Hyder II §3): melds <paramref name="intention"/> against <paramref name="input"/>,
    /// a committed state newer than its snapshot, in intention mode. On success
    /// <paramref name="output"/> is an intention that appears to have run on <paramref name="input"/>:
    /// same ordinal and position, every write, read and range dependency kept, versions re-based on
    /// the input (docs/meld.md, "Premeld"). On a conflict the transaction aborts here and
    /// <paramref name="output"/> is null.
    /// </summary>
    /// <remarks>
    /// Consumes the intention: its nodes that the output does not use go back to this operator's
    /// pool. The output pins <paramref name="input"/> and keeps the original snapshot's pin (its
    /// phantom base) until it is melded; on abort the snapshot's pin is released.
    /// </remarks>
    public MeldOutcome Premeld(Intention intention, DatabaseState input, out Intention? output)
    {
        if (input.Sequence <= intention.LatestSnapshotSequence)
        {
            ThrowHelper.ThrowInvalidOperation($"premeld of {intention} needs an input newer than its snapshot, not state #{input.Sequence}");
        }

        _movedRanges.Clear();
        Run(intention, input, apply: true, intentionMode: true, out var root);
        if (_outcome.Committed)
        {
            AssertOutput(root, state: false);
            var ranges = intention.RootRanges;
            if (_movedRanges.Count > 0)
            {
                ranges = [.. ranges, .. _movedRanges];
            }

            input.AddPin();
            output = intention.Premelded(root, input, ranges, _deferred || intention.HasDeferredChecks);
            intention.DropSealOrder();
            RecycleIntention(intention.Root, keepGrafted: true);
            _fresh.Clear();
        }
        else
        {
            output = null;
            intention.DropSealOrder();
            RecycleIntention(intention.Root, keepGrafted: false);
            _fresh.ReturnAllTo(_pool);
            _sequence = _sequenceAtStart;
        }

        // On success the original snapshot's pin passes to the output, as its phantom base.
        if (output is null)
        {
            intention.ReleasePins();
        }

        Counters.Add(_outcome);
        return _outcome;
    }

    private void Run(Intention intention, DatabaseState lcs, bool apply, bool intentionMode, out Node? newRoot)
    {
        if (!intention.IsSealed)
        {
            ThrowHelper.ThrowInvalidOperation("meld needs a sealed intention (append it first)");
        }

        if (intention.LatestSnapshotSequence > lcs.Sequence || intention.FirstOrdinal <= lcs.Sequence)
        {
            ThrowHelper.ThrowRejected(
                $"{intention} cannot be melded into state #{lcs.Sequence}: its snapshot must not be newer than the state and it must come after it");
        }

        Begin(intention, lcs, intention.FirstOrdinal, apply, intentionMode);
        _outcome.ConflictZoneLength = intention.Ordinal - 1 - intention.OldestSnapshotSequence;
        _outcome.Grouped = intention.IsGroup;

        try
        {
            newRoot = MeldRoot(lcs);
        }
        catch
        {
            // A rejected intention leaves the state untouched: nothing made here was published.
            _outcome.Committed = false;
            FinishStaging();
            _fresh.ReturnAllTo(_pool);
            _displaced.Clear();
            _sequence = _sequenceAtStart;
            _intention = null!;
            _state = null;
            throw;
        }

        _outcome.EphemeralNodesCreated = (int)(_sequence - _sequenceAtStart);
        FinishStaging();
        _intention = null!;
        _state = null;
        if (!_outcome.Committed)
        {
            newRoot = lcs.Root;
        }
    }

    /// <summary>Resets the per-meld fields: every entry point starts here.</summary>
    /// <param name="intention">The intention melded (for group meld, the second part).</param>
    /// <param name="lcs">The state melded into; null for group meld, whose "state" is the first part.</param>
    /// <param name="ownerLow">The lowest owner that counts as inside (the first part's ordinal, for a group).</param>
    /// <param name="apply">Whether the result is kept (nodes are marked grafted, sources retired).</param>
    /// <param name="intentionMode">Premeld and group meld: the output is an intention, not a state.</param>
    private void Begin(Intention intention, DatabaseState? lcs, long ownerLow, bool apply, bool intentionMode)
    {
        _intention = intention;
        _state = lcs;
        _ownerLow = ownerLow;
        _ownerHigh = intention.Ordinal;
        _phantomBase = intention.PhantomBase;
        _apply = apply;
        _intentionMode = intentionMode;
        _outputIsIntention = intentionMode;
        _deferred = false;
        _sequenceAtStart = _sequence;
        _outcome = default;
        _dying.Clear();
    }

    private Node? MeldRoot(DatabaseState lcs)
    {
        var i = _intention;

        if (_apply && !_intentionMode && SplitTable is { } split)
        {
            // Operations on split keys and nothing else: staged without visiting the state (Doppel
            // §5). Such an intention reads and writes nothing, so it cannot conflict.
            if (i.HasOperations && i.Deletes.Length == 0 && i.RootRanges.Length == 0 && i.SecondRootRanges.Length == 0 && OnlySplitOperations(i.Root, split))
            {
                if (StageAll(i.Root, lcs.Root, split))
                {
                    return null;
                }

                _outcome.Committed = true;
                _outcome.StagedOnly = true;
                return lcs.Root;
            }

            // A split key changed in this phase: the tree does not show it, so no check below would.
            if (split.ChangedKeys.Count > 0 && SplitConflict(i, split))
            {
                return null;
            }
        }

        // Serial intention: its snapshot is the last committed state, so its tree is the new state.
        // A premeld output is serial only when premeld left nothing to check: no deferred check
        // and no range moved to its root (premeld moves a range once it has looked at part of it).
        // Operations must be applied, so an intention with some is never serial.
        if (i.Snapshot == lcs && !_intentionMode && !i.HasDeferredChecks && !i.HasOperations && (!i.IsPremelded || i.RootRanges.Length == 0))
        {
            _outcome.Serial = true;
            _outcome.Committed = true;
            foreach (var d in i.Deletes)
            {
                var old = FindState(lcs.Root, d.Key);
                if (old is not null)
                {
                    Retire(old, null);
                }
            }

            MarkGrafted(i.Root);
            return Publish(i.Root);
        }

        if (CheckDeletes(lcs.Root))
        {
            return null;
        }

        foreach (var range in i.RootRanges)
        {
            if (PhantomCheck(lcs.Root, range))
            {
                return null;
            }
        }

        // A group's second part read another snapshot: its ranges are judged against that one.
        _phantomBase = i.SecondPhantomBase ?? i.PhantomBase;
        foreach (var range in i.SecondRootRanges)
        {
            if (PhantomCheck(lcs.Root, range))
            {
                return null;
            }
        }

        _phantomBase = i.PhantomBase;

        if (Meld(lcs.Root, i.Root, KeyRange.All, build: !_decideOnly, out var root))
        {
            return null;
        }

        if (_decideOnly)
        {
            _outcome.Committed = true;
            return lcs.Root;
        }

        root = ApplyDeletes(lcs.Root, root);
        MarkGrafted(root);
        root = Publish(root);
        _outcome.Committed = true;
        return root;
    }

    /// <summary>True when the node belongs to the intention being melded.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool Inside(Node n) => n.Owner >= _ownerLow && n.Owner <= _ownerHigh;

    /// <summary>Records an abort and returns true, so callers can write <c>return Conflict(...)</c>.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private bool Conflict(AbortCause cause, byte[] key)
    {
        _outcome.Cause = cause;
        _outcome.ConflictKey = key;
        return true;
    }

    /// <summary>
    /// Hands the melded intention's nodes that are not part of the new state back to the pool, as
    /// <see cref="RecycleIntention(Node?, bool)"/> does, from the encoder's list of its inside nodes
    /// when it has one (<see cref="Intention.TakeInsideNodes"/>; <see cref="_recycleFromList"/>):
    /// the tree walk reads every outside child to see that it is outside, a node of the state's
    /// tree and cold in this core's cache, about as many as there are inside nodes, on the one
    /// serial thread.
    /// </summary>
    private void RecycleIntention(Intention intention, Node? newRoot, bool committed)
    {
        _recycleFromList = false;
        if (!intention.TakeInsideNodes(out var nodes, out var count))
        {
            RecycleIntention(intention.Root, keepGrafted: committed);
            return;
        }

        (HashSet<Node> Walk, HashSet<Node> State)? expected = null;
        CollectListRecycles(intention.Root, committed ? newRoot : null, committed, ref expected);
        var recycled = RecycleListed(nodes, count, committed);
        AssertRecycledAsExpected(expected, recycled, intention);
        Intention.ReturnInsideNodes(nodes, count);
    }

    /// <summary>
    /// The list walk. The list is in post-order, so read backwards each node comes after its parent
    /// and after the rest of its parent's other subtree: a stack of the ancestors (with their
    /// children as they were before recycling cleared them) finds the parent without dereferencing
    /// any child. After a commit, publishing reached every grafted node and every inside child of a
    /// node it kept, and kept those not only read (<see cref="PublishChild"/>); a read-only one it
    /// swapped for its source (the parent now points there), and left it, with its subtree, to this
    /// walk. The topmost grafted nodes lose their mark, as in the tree walk.
    /// </summary>
    private List<Node>? RecycleListed(Node[] nodes, int count, bool committed)
    {
        List<Node>? recycled = null;
        RecordRecycled(ref recycled);
        var depth = 0;
        for (var i = count - 1; i >= 0; i--)
        {
            var n = nodes[i];
            Invariant.Assert((n.Flags & NodeFlags.Pooled) == 0, $"node {i} of {_intention}'s list is already in a pool");
            var kept = false;
            if (committed)
            {
                while (depth > 0 && !_ancestors[depth - 1].IsParentOf(n))
                {
                    depth--;
                }

                var parentKept = depth > 0 && _ancestors[depth - 1].Kept;
                kept = (parentKept || (n.Flags & NodeFlags.Grafted) != 0) && (n.Flags & NodeFlags.SubtreeIsOnlyReadDependent) == 0;
                if (kept && !parentKept)
                {
                    n.Flags &= ~NodeFlags.Grafted;
                }

                if (depth == _ancestors.Length)
                {
                    Array.Resize(ref _ancestors, depth * 2);
                }

                _ancestors[depth++] = new Ancestor(n.Left, n.Right, kept);
            }

            if (!kept)
            {
                recycled?.Add(n);
                _pool.Return(n);
            }
        }

        Array.Clear(_ancestors, 0, depth);
        return recycled;
    }

    /// <summary>
    /// A node on the list walk's ancestor stack: its children, and whether it stays in the state.
    /// A child publishing swapped for its source is found through that source.
    /// </summary>
    private readonly record struct Ancestor(Node? Left, Node? Right, bool Kept)
    {
        public bool IsParentOf(Node n) =>
            ReferenceEquals(Left, n) || ReferenceEquals(Right, n) ||
            ((n.Flags & NodeFlags.SubtreeIsOnlyReadDependent) != 0 && n.Source is { } source && (ReferenceEquals(Left, source) || ReferenceEquals(Right, source)));
    }

    private Ancestor[] _ancestors = new Ancestor[64];

    /// <summary>
    /// True during a final meld whose intention will be recycled from its node list: publishing
    /// then leaves a swapped read-only subtree to that walk instead of walking it itself.
    /// </summary>
    private bool _recycleFromList;

    /// <summary>Debug tier: the read-only subtrees publishing left to the list walk (<see cref="RecordSwapped"/>).</summary>
    private readonly List<Node> _swapped = [];

    /// <summary>
    /// Hands the intention's nodes that are not part of the new state back to the pool: the walk
    /// follows inside pointers only and stops at grafted nodes (clearing their mark).
    /// </summary>
    private void RecycleIntention(Node? n, bool keepGrafted)
    {
        if (n is null || !Inside(n))
        {
            return;
        }

        if (keepGrafted && (n.Flags & NodeFlags.Grafted) != 0)
        {
            n.Flags &= ~NodeFlags.Grafted;
            return;
        }

        var left = n.Left;
        var right = n.Right;
        _pool.Return(n);
        RecycleIntention(left, keepGrafted);
        RecycleIntention(right, keepGrafted);
    }
}
