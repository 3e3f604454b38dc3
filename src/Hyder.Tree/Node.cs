using System.Diagnostics;
using System.Runtime.CompilerServices;

namespace Hyder.Tree;

/// <summary>
/// One version of one key in the copy-on-write tree, with its meld metadata (meld paper §4).
/// </summary>
/// <remarks>
/// A node is immutable once it is reachable from a published state or a sealed intention; only the
/// executor that owns an unsealed intention and the meld call that just created an ephemeral node
/// may change it. Nodes come from per-thread pools (<see cref="Memory.NodePool"/>).
/// </remarks>
[DebuggerDisplay("{Keys.Format(Key),nq} vn={Vn} ssv={Ssv} scv={Scv} {Flags}")]
public sealed class Node
{
    private byte[] _key = [];

    /// <summary>The key.</summary>
    public byte[] Key
    {
        get => _key;
        set
        {
            _key = value;
            KeyPrefix = Keys.Prefix(value);
            KeyLength = value.Length;
        }
    }

    /// <summary>Gives this node <paramref name="other"/>'s key and its cached prefix, without recomputing the prefix.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal void CopyKeyOf(Node other)
    {
        _key = other._key;
        KeyPrefix = other.KeyPrefix;
        KeyLength = other.KeyLength;
    }

    /// <summary>
    /// The key's first 8 bytes, big-endian, zero-padded: compared before the key itself, so a
    /// comparison of keys up to 8 bytes never leaves the node (the arrays are cache misses).
    /// </summary>
    public ulong KeyPrefix;

    /// <summary>
    /// The key's length, kept beside <see cref="KeyPrefix"/>: with it, two keys of up to 8 bytes
    /// compare without either array (the prefix pads with zeros, so only the lengths tell "ab"
    /// from "ab\0"). It sits in what was padding, so a node is no larger.
    /// </summary>
    public int KeyLength { get; private set; }

    /// <summary>The payload.</summary>
    public byte[] Payload = [];

    /// <summary>Left child (smaller keys), or null.</summary>
    public Node? Left;

    /// <summary>Right child (larger keys), or null.</summary>
    public Node? Right;

    /// <summary>
    /// Executor bookkeeping, in memory only: the snapshot node this intention node was copied from.
    /// Meld uses it to retire exactly the state nodes a graft replaces, then clears it, so no
    /// published node keeps an older one alive.
    /// </summary>
    public Node? Source;

    /// <summary>This node's version.</summary>
    public NodeVersion Vn;

    /// <summary>Source structure version: NSV of the node this one was copied from, or none.</summary>
    public NodeVersion Ssv;

    /// <summary>Source content version: NCV of the node this one was copied from, or none.</summary>
    public NodeVersion Scv;

    /// <summary>
    /// Which intention the node belongs to: the intention's ordinal (≥ 1) once sealed, a negative
    /// transaction token while its transaction runs, 0 for an ephemeral node of a state.
    /// </summary>
    public long Owner;

    /// <summary>
    /// The key ranges a <see cref="NodeFlags.DependsOnTree"/> node depends on (scans and reads of
    /// absent keys whose lowest common ancestor is this node); kept apart, never merged, so the
    /// check stays exact.
    /// </summary>
    public KeyRange[]? DependencyRanges;

    /// <summary>Meld flags.</summary>
    public NodeFlags Flags;

    /// <summary>AVL height of the subtree (a leaf has 1).</summary>
    public byte Height;

    /// <summary>
    /// In memory only, never encoded or hashed: <see cref="Payload"/> is an array from the
    /// database's <see cref="Memory.ValuePool"/> that only versions of this key hold
    /// (docs/value-storage.md). Copies of the node for structure carry it with the payload; any
    /// other payload clears it.
    /// </summary>
    internal bool PayloadFromPool;

    /// <summary>
    /// In memory only: final meld displaced this state node for a version that does not hold its
    /// payload, so the payload goes back to the value pool when the node is reclaimed.
    /// </summary>
    internal bool PayloadDies;

    /// <summary>Takes <paramref name="other"/>'s payload, and with it whether the payload is pooled.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal void CopyPayloadOf(Node other)
    {
        Payload = other.Payload;
        PayloadFromPool = other.PayloadFromPool;
    }

    /// <summary>Sets a payload that did not come from the value pool (a computed value, an operation list).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    internal void SetOwnPayload(byte[] payload)
    {
        Payload = payload;
        PayloadFromPool = false;
    }

    /// <summary>Altered flag.</summary>
    public bool Altered => (Flags & NodeFlags.Altered) != 0;

    /// <summary>DependsOn flag.</summary>
    public bool DependsOn => (Flags & NodeFlags.DependsOn) != 0;

    /// <summary>DependsOnTree flag.</summary>
    public bool DependsOnTree => (Flags & NodeFlags.DependsOnTree) != 0;

    /// <summary>True when the payload is an operation list (<see cref="NodeFlags.Operations"/>).</summary>
    public bool HasOperations => (Flags & NodeFlags.Operations) != 0;

    /// <summary>SubtreeIsOnlyReadDependent flag.</summary>
    public bool SubtreeIsOnlyReadDependent => (Flags & NodeFlags.SubtreeIsOnlyReadDependent) != 0;

    /// <summary>New content version: the version that produced this payload.</summary>
    public NodeVersion Ncv
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Flags & NodeFlags.Altered) != 0 ? Vn : Scv;
    }

    /// <summary>New structure version: the oldest version whose subtree is exactly this one's.</summary>
    public NodeVersion Nsv
    {
        [MethodImpl(MethodImplOptions.AggressiveInlining)]
        get => (Flags & NodeFlags.SubtreeIsOnlyReadDependent) != 0 ? Ssv : Vn;
    }

    /// <summary>Height of a possibly empty subtree.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int HeightOf(Node? n) => n is null ? 0 : n.Height;

    /// <summary>Recomputes <see cref="Height"/> from the children.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void FixHeight()
    {
        var l = HeightOf(Left);
        var r = HeightOf(Right);
        Height = (byte)((l > r ? l : r) + 1);
    }

    /// <summary>Clears every field so a pooled node holds no references.</summary>
    internal void Clear()
    {
        // Not through the Key setter: the prefix of the empty key is 0, and a clear runs for every
        // node that goes back to a pool, many of them on the final-meld thread.
        _key = [];
        KeyPrefix = 0;
        KeyLength = 0;
        Payload = [];
        Left = null;
        Right = null;
        Source = null;
        Vn = default;
        Ssv = default;
        Scv = default;
        Owner = 0;
        DependencyRanges = null;
        Flags = NodeFlags.Pooled;
        Height = 0;
        PayloadFromPool = false;
        PayloadDies = false;
    }
}
