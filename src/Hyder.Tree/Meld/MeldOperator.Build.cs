using System.Runtime.CompilerServices;

namespace Hyder.Tree.Meld;

public sealed partial class MeldOperator
{
    /// <summary>
    /// Publishes the merged tree: every intention subtree the new state uses is published
    /// (<see cref="PublishSubtree"/>), and a read-only copy is swapped back for the state node it
    /// was copied from. Walks only the nodes this meld made, plus the grafted subtrees.
    /// </summary>
    /// <remarks>
    /// Read-only copies never stay in a state: then no two objects in a state share a structure
    /// version, which is what lets <see cref="Node.Source"/> name the node a graft replaces and
    /// guarantees that a displaced node never comes back (docs/meld.md, "Reclaiming nodes").
    /// </remarks>
    private Node? Publish(Node? root) => _apply && !_intentionMode ? PublishEdge(root) : root;

    /// <summary>What the new state keeps at one pointer of the merged tree.</summary>
    private Node? PublishEdge(Node? c)
    {
        if (c is null)
        {
            return null;
        }

        if (IsFresh(c))
        {
            c.Left = PublishEdge(c.Left);
            c.Right = PublishEdge(c.Right);
            return c;
        }

        if (!Inside(c))
        {
            return c;
        }

        // The topmost intention nodes the new state keeps are marked here, where they are known,
        // not when the recursion hung them under a fresh node: a later rotation (ApplyDeletes,
        // Join) may still copy such a node, and a mark left on it would keep it, and shield an
        // unswapped read-only copy under it, from the recycling walks.
        var kept = PublishChild(c);
        if (kept == c)
        {
            c.Flags |= NodeFlags.Grafted;
        }

        return kept;
    }

    /// <summary>Publishes an intention node the new state references; returns what the state keeps.</summary>
    private Node? PublishChild(Node n)
    {
        if (n.SubtreeIsOnlyReadDependent)
        {
            var source = n.Source;
            if (source is null)
            {
                ThrowHelper.ThrowInvariant($"read-only intention node {Keys.Format(n.Key)} has no source to publish");
            }

            if (_recycleFromList)
            {
                RecordSwapped(n);
            }
            else
            {
                RecycleIntention(n, keepGrafted: false);
            }

            return source;
        }

        PublishSubtree(n);
        return n;
    }

    /// <summary>Walks a grafted subtree's inside nodes: retires their sources, swaps read-only copies back (final meld only, through <see cref="Publish"/>).</summary>
    private void PublishSubtree(Node x)
    {
        if (x.HasOperations)
        {
            ThrowHelper.ThrowInvariant($"intention node {Keys.Format(x.Key)} would enter the state with its operations unapplied");
        }

        if (x.Source is not null)
        {
            AssertInState(x.Source, "a graft");
            _displaced.Add(x.Source);
            PayloadMayDie(x.Source, x.Payload);
            x.Source = null;
        }
        else if (x.Scv.IsSome && _state is { } lcs && FindState(lcs.Root, x.Key) is { } replaced)
        {
            // A version of an existing key with no source (a key the transaction deleted and
            // inserted again, a premeld copy of an intention node) still takes the place of the
            // state's node for its key: one lookup, only for such nodes.
            Retire(replaced, x.Payload);
        }

        if (x.Left is { } left && Inside(left))
        {
            x.Left = PublishChild(left);
        }

        if (x.Right is { } right && Inside(right))
        {
            x.Right = PublishChild(right);
        }
    }

    /// <summary>
    /// The node for state node <paramref name="l"/>'s key after melding, given the intention's node
    /// <paramref name="p"/> with that key (or null) and the melded children: <paramref name="l"/>
    /// itself when nothing changed, otherwise a new ephemeral node (§7.1 steps 1-6), balanced with
    /// its children.
    /// </summary>
    /// <remarks>
    /// In intention mode (premeld) the node keeps the transaction's marks — Altered, DependsOn,
    /// the dependency ranges — with SCV re-based on the input state (premeld has checked that the
    /// content did not change) and SSV kept only where the subtree still has the input's shape.
    /// </remarks>
    private Node? Combine(Node l, Node? p, Node? left, Node? right)
    {
        Invariant.Assert(!Settles(p), "final meld applies an operation list with Materialize, not Combine");
        var altered = p is not null && p.Altered;
        var operations = p is not null && p.HasOperations;
        var carries = _intentionMode ? p is not null && (p.Flags & IntentionMarks) != 0 : altered;
        if (!carries && left == l.Left && right == l.Right)
        {
            return l;
        }

        var x = NewEphemeral();
        x.CopyKeyOf(l);
        x.CopyPayloadOf(altered || operations ? p! : l);
        if (_intentionMode)
        {
            x.Owner = _ownerHigh;
            x.Source = l;
            x.Scv = l.Ncv;
            var deferred = false;
            if (p is not null)
            {
                x.Flags = p.Flags & CarriedFlags;
                MoveRanges(p);
                if ((p.DependsOn || (altered && (p.Flags & NodeFlags.BlindWrite) == 0)) && p.Scv != l.Ncv)
                {
                    // A deferred check (an insert of a key the input holds): keep the
                    // transaction's expectation for final meld.
                    x.Scv = p.Scv;
                    deferred = true;
                }
            }

            // A node with a deferred check must never be grafted past by final meld: no SSV, and
            // (through Preserves) none on its ancestors either. Nor may a node with operations,
            // which final meld must reach to apply them.
            if (!deferred && !operations && Preserves(left, l.Left) && Preserves(right, l.Right))
            {
                x.Ssv = l.Nsv;
                if (!altered && ReadOnlyOrOutside(left) && ReadOnlyOrOutside(right))
                {
                    x.Flags |= NodeFlags.SubtreeIsOnlyReadDependent;
                }
            }
        }
        else
        {
            x.Scv = altered ? p!.Ncv : l.Ncv;
            x.Ssv = l.Nsv;
            Retire(l, x.Payload);
        }

        return Place(left, x, right);
    }

    /// <summary>
    /// Premeld hands every dependency range it examines (or rebuilds the node of) to the output's
    /// root ranges, which final meld checks against the whole state, exactly, against the original
    /// snapshot. A range left on a node is unsafe once premeld has looked at it: the node may be
    /// grafted or rebuilt in the input's shape, whose key interval need not hold the range, and
    /// premeld may have deferred a phantom in it (docs/meld.md, "Premeld").
    /// </summary>
    private void MoveRanges(Node n)
    {
        // Only the transaction's own nodes: a state node keeps the marks of the intention that
        // published it, and they check nothing any more.
        if (_intentionMode && n.DependsOnTree && Inside(n))
        {
            _movedRanges.AddRange(n.DependencyRanges!);

            // Group meld leaves the first part as it is: it may still go on alone.
            if (!_grouping)
            {
                n.Flags &= ~NodeFlags.DependsOnTree;
                n.DependencyRanges = null;
            }
        }
    }

    private const NodeFlags IntentionMarks = NodeFlags.Altered | NodeFlags.DependsOn | NodeFlags.DependsOnTree | NodeFlags.Operations;

    /// <summary>The marks a node premeld or group meld rebuilds keeps from the intention's node (ranges move separately).</summary>
    private const NodeFlags CarriedFlags = NodeFlags.Altered | NodeFlags.DependsOn | NodeFlags.BlindWrite | NodeFlags.Operations;

    /// <summary>True when a melded child still covers exactly the input's subtree shape (its SSV names it).</summary>
    private static bool Preserves(Node? result, Node? original) =>
        result == original || (result is not null && original is not null && result.Ssv.IsSome && result.Ssv == original.Nsv);

    private bool ReadOnlyOrOutside(Node? n) => n is null || !Inside(n) || n.SubtreeIsOnlyReadDependent;

    /// <summary>Hangs the children under a fresh node, rebalancing when their heights are too far apart.</summary>
    private Node Place(Node? left, Node x, Node? right)
    {
        var hl = Node.HeightOf(left);
        var hr = Node.HeightOf(right);
        if (hl - hr is > 1 or < -1)
        {
            return Join(left, x, right);
        }

        x.Left = left;
        x.Right = right;
        x.FixHeight();
        MarkGrafted(left);
        MarkGrafted(right);
        return x;
    }

    /// <summary>A new ephemeral node with the next two-part id of this stage thread.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private Node NewEphemeral()
    {
        var e = _pool.Rent();
        e.Vn = NodeVersion.Ephemeral(_threadId, _sequence++);
        e.Owner = 0;
        _fresh.Add(e);
        return e;
    }

    /// <summary>True for an ephemeral node made by the meld in progress (it may still be changed).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private bool IsFresh(Node n) =>
        n.Vn.IsEphemeral && n.Vn.ThreadId == _threadId && n.Vn.Sequence >= _sequenceAtStart;

    /// <summary>
    /// Marks an intention node that premeld's or group meld's output references directly. Final
    /// meld marks the nodes its new state keeps when it publishes them (<see cref="PublishEdge"/>).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void MarkGrafted(Node? n)
    {
        if (_apply && _outputIsIntention && n is not null && Inside(n) && !IsFresh(n))
        {
            n.Flags |= NodeFlags.Grafted;
        }
    }

    /// <summary>
    /// A state or intention node that the result no longer uses; <paramref name="kept"/> is the
    /// payload of the version of its key that takes its place (null: the key is gone).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Retire(Node n, byte[]? kept)
    {
        // Intention nodes are recycled by the intention walk; state nodes wait for older states;
        // premeld displaces nothing (its input state stays as it is).
        if (_apply && !_intentionMode && !Inside(n))
        {
            AssertInState(n, "meld");
            _displaced.Add(n);
            PayloadMayDie(n, kept);
        }
    }

    /// <summary>
    /// The lifetime rule of docs/value-storage.md: a displaced state node's pooled payload is dead
    /// once the node is, unless the version that takes its place holds the same array. Recorded
    /// here, marked only when the meld commits (<see cref="MarkDyingPayloads"/>). Only final meld
    /// calls it (<see cref="Retire"/> when it displaces a state node, the graft's publishing).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void PayloadMayDie(Node displaced, byte[]? kept)
    {
        if (displaced.PayloadFromPool && !ReferenceEquals(displaced.Payload, kept))
        {
            _dying.Add(displaced);
        }
    }

    /// <summary>A meld committed: its displaced nodes whose payloads die say so, for <see cref="Database"/>'s reclamation.</summary>
    private void MarkDyingPayloads()
    {
        for (var i = 0; i < _dying.Count; i++)
        {
            _dying[i].PayloadDies = true;
        }

        _dying.Clear();
    }

    /// <summary>
    /// Node <paramref name="t"/>'s content with the given children: changed in place when
    /// <paramref name="t"/> is fresh, otherwise as an ephemeral copy (copy-on-write).
    /// </summary>
    private Node Make(Node t, Node? left, Node? right)
    {
        if (IsFresh(t))
        {
            if (_intentionMode)
            {
                // A fresh child may have been changed in place, so the same child object is no
                // proof of the same subtree: judge the shape from the children themselves.
                if (t.Ssv.IsSome && !(t.Source is { } source && Preserves(left, source.Left) && Preserves(right, source.Right)))
                {
                    t.Ssv = NodeVersion.None;
                }

                if (!t.Ssv.IsSome || !ReadOnlyOrOutside(left) || !ReadOnlyOrOutside(right))
                {
                    t.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
                }
            }

            t.Left = left;
            t.Right = right;
            t.FixHeight();
            MarkGrafted(left);
            MarkGrafted(right);
            return t;
        }

        if (t.Left == left && t.Right == right)
        {
            return t;
        }

        Invariant.Assert(_intentionMode || !t.HasOperations, "final meld never copies a node with operations into the state");
        var e = NewEphemeral();
        e.CopyKeyOf(t);
        e.CopyPayloadOf(t);
        if (_intentionMode)
        {
            // A copy in the output intention: an intention node keeps its marks; a state node
            // becomes a path node. Either way its shape is new (SSV none).
            e.Owner = _ownerHigh;
            if (Inside(t))
            {
                e.Flags = t.Flags & CarriedFlags;
                MoveRanges(t);
                e.Scv = t.Scv;
            }
            else
            {
                e.Scv = t.Ncv;
                e.Source = t;
            }
        }
        else
        {
            e.Scv = t.Ncv;
            e.Ssv = t.Nsv;
            Retire(t, e.Payload);
        }

        e.Left = left;
        e.Right = right;
        e.FixHeight();
        MarkGrafted(left);
        MarkGrafted(right);
        return e;
    }

    /// <summary>A balanced tree of <paramref name="l"/>, <paramref name="mid"/> and <paramref name="r"/> (all of l below mid below all of r), any heights.</summary>
    private Node Join(Node? l, Node mid, Node? r)
    {
        var hl = Node.HeightOf(l);
        var hr = Node.HeightOf(r);
        if (hl > hr + 1)
        {
            return JoinRight(l!, mid, r);
        }

        if (hr > hl + 1)
        {
            return JoinLeft(l, mid, r!);
        }

        return Make(mid, l, r);
    }

    private Node JoinRight(Node l, Node mid, Node? r)
    {
        var c = l.Right;
        if (Node.HeightOf(c) <= Node.HeightOf(r) + 1)
        {
            var t = Make(mid, c, r);
            if (t.Height <= Node.HeightOf(l.Left) + 1)
            {
                return Make(l, l.Left, t);
            }

            return RotateLeft(Make(l, l.Left, RotateRight(t)));
        }

        var t2 = JoinRight(c!, mid, r);
        var top = Make(l, l.Left, t2);
        return t2.Height <= Node.HeightOf(l.Left) + 1 ? top : RotateLeft(top);
    }

    private Node JoinLeft(Node? l, Node mid, Node r)
    {
        var c = r.Left;
        if (Node.HeightOf(c) <= Node.HeightOf(l) + 1)
        {
            var t = Make(mid, l, c);
            if (t.Height <= Node.HeightOf(r.Right) + 1)
            {
                return Make(r, t, r.Right);
            }

            return RotateRight(Make(r, RotateLeft(t), r.Right));
        }

        var t2 = JoinLeft(l, mid, c!);
        var top = Make(r, t2, r.Right);
        return t2.Height <= Node.HeightOf(r.Right) + 1 ? top : RotateRight(top);
    }

    private Node RotateLeft(Node x)
    {
        var y = x.Right!;
        return Make(y, Make(x, x.Left, y.Left), y.Right);
    }

    private Node RotateRight(Node x)
    {
        var y = x.Left!;
        return Make(y, y.Left, Make(x, y.Right, x.Right));
    }

    /// <summary>Concatenates two balanced trees (every key of l below every key of r).</summary>
    private Node? Join2(Node? l, Node? r)
    {
        if (l is null)
        {
            return r;
        }

        if (r is null)
        {
            return l;
        }

        var rest = SplitMin(r, out var min);
        return Join(l, min, rest);
    }

    /// <summary>Removes the smallest node of <paramref name="t"/>, returning the rest; the node itself comes back as a template.</summary>
    private Node? SplitMin(Node t, out Node min)
    {
        if (t.Left is null)
        {
            min = t;
            return t.Right;
        }

        var rest = SplitMin(t.Left, out min);
        return Join(rest, t, t.Right);
    }
}
