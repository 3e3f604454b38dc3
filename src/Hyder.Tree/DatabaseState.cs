using Hyder.Tree.Commutative;
using Hyder.Tree.Memory;

namespace Hyder.Tree;

/// <summary>
/// One committed database state: the tree after melding every intention up to <see cref="Sequence"/>.
/// Immutable once published; readers pin it while they use it (see <see cref="Database"/> for the
/// reclamation protocol).
/// </summary>
public sealed class DatabaseState
{
    private int _pins;
    private volatile bool _retiring;

    internal DatabaseState(Node? root, long sequence)
    {
        Root = root;
        Sequence = sequence;
    }

    /// <summary>The root of the tree, null when the database is empty.</summary>
    public Node? Root { get; private set; }

    /// <summary>The ordinal of the last intention melded into this state (0 for the initial state).</summary>
    public long Sequence { get; private set; }

    /// <summary>
    /// The keys split in the phase this state lies inside (Doppel §5): their values in this tree
    /// may be behind the split table, so a transaction must not read them here (it reads them on a
    /// reconciled state instead; docs/doppel.md, "Split phases"). Null when no key is split.
    /// </summary>
    public SplitKeySet? SplitKeys { get; internal set; }

    /// <summary>True for the state published at the end of a split phase, after reconciliation.</summary>
    public bool IsReconciled { get; internal set; }

    /// <summary>
    /// For a reconciled state, the keys split in the phase that starts after it (null: none): what
    /// a server restarted from a checkpoint of this state needs to split the same keys as its peers.
    /// </summary>
    public SplitKeySet? FollowingSplitKeys { get; internal set; }

    /// <summary>Makes a retired state object (no pins, unreachable) describe a new state.</summary>
    internal void Reuse(Node? root, long sequence)
    {
        if (Volatile.Read(ref _pins) != 0 || Newer is not null || Displaced is not null)
        {
            ThrowHelper.ThrowInvariant($"state #{Sequence} reused while still in use");
        }

        Root = root;
        Sequence = sequence;
        SplitKeys = null;
        IsReconciled = false;
        FollowingSplitKeys = null;
        _retiring = false;
    }

    /// <summary>The next newer retained state, or null for the newest.</summary>
    internal DatabaseState? Newer { get; set; }

    /// <summary>
    /// Nodes of older states that this state's meld displaced: reachable only from states older
    /// than this one, so they are recycled once every older state is released.
    /// </summary>
    internal NodeList? Displaced { get; set; }

    /// <summary>Readers holding this state.</summary>
    public int Pins => Volatile.Read(ref _pins);

    /// <summary>Takes a pin unless the state is being retired; executor side, may race with reclamation.</summary>
    internal bool TryPin()
    {
        Interlocked.Increment(ref _pins);
        if (_retiring)
        {
            Interlocked.Decrement(ref _pins);
            return false;
        }

        return true;
    }

    /// <summary>Takes a pin on a state the caller already holds pinned (cannot be retiring).</summary>
    internal void AddPin() => Interlocked.Increment(ref _pins);

    /// <summary>Releases a pin.</summary>
    internal void Unpin()
    {
        if (Interlocked.Decrement(ref _pins) < 0)
        {
            ThrowHelper.ThrowInvariant($"state #{Sequence} unpinned more often than pinned");
        }
    }

    /// <summary>Marks the state as retiring; true when no reader holds it (then it never will).</summary>
    internal bool TryRetire()
    {
        _retiring = true;
        Interlocked.MemoryBarrier();
        if (Volatile.Read(ref _pins) == 0)
        {
            return true;
        }

        _retiring = false;
        return false;
    }

    /// <inheritdoc/>
    public override string ToString() => $"state #{Sequence}";
}
