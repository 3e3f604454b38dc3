using System.Runtime.CompilerServices;

namespace Hyder.Tree.Meld;

public sealed partial class MeldOperator
{
    /// <summary>
    /// Puts the intention subtree <paramref name="n"/> in place of the state subtree
    /// <paramref name="replaced"/> (a serial subtree), and retires exactly the state nodes it replaces.
    /// </summary>
    /// <remarks>
    /// Read-only copies inside the graft are swapped back for the state nodes they were copied from
    /// (same key, payload and subtree), so a published state never holds two objects with one
    /// structure version; that is what lets <see cref="Node.Source"/> name the replaced node exactly.
    /// See docs/meld.md, "Reclaiming nodes".
    /// </remarks>
    private Node? Graft(Node? n, Node? replaced)
    {
        if (n is null || !Inside(n))
        {
            return n;
        }

        if (!_apply)
        {
            return n;
        }

        if (n.SubtreeIsOnlyReadDependent)
        {
            // Only the serial whole-intention path gets here with a read-only root.
            var source = n.Source ?? replaced;
            RecycleIntention(n, keepGrafted: false);
            return source;
        }

        PublishSubtree(n);
        return n;
    }

    /// <summary>Walks a grafted subtree's inside nodes: retires their sources, swaps read-only copies back.</summary>
    private void PublishSubtree(Node x)
    {
        if (x.Source is not null)
        {
            _displaced.Add(x.Source);
            x.Source = null;
        }

        var left = x.Left;
        if (left is not null && Inside(left))
        {
            if (left.SubtreeIsOnlyReadDependent)
            {
                x.Left = left.Source;
                RecycleIntention(left, keepGrafted: false);
            }
            else
            {
                PublishSubtree(left);
            }
        }

        var right = x.Right;
        if (right is not null && Inside(right))
        {
            if (right.SubtreeIsOnlyReadDependent)
            {
                x.Right = right.Source;
                RecycleIntention(right, keepGrafted: false);
            }
            else
            {
                PublishSubtree(right);
            }
        }
    }

    /// <summary>
    /// The node for state node <paramref name="l"/>'s key after melding: <paramref name="l"/> itself
    /// when nothing changed, otherwise an ephemeral node (§7.1 steps 1-6) balanced with its children.
    /// </summary>
    private Node? Combine(Node l, Node? n, Node? left, Node? right)
    {
        var altered = n is not null && n.Altered;
        if (!altered && left == l.Left && right == l.Right)
        {
            return l;
        }

        var e = NewEphemeral();
        e.Key = l.Key;
        if (altered)
        {
            e.Payload = n!.Payload;
            e.Scv = n.Ncv;
        }
        else
        {
            e.Payload = l.Payload;
            e.Scv = l.Ncv;
        }

        e.Ssv = l.Nsv;
        Retire(l);
        return Join(left, e, right);
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
        n.Vn.IsEphemeral && n.Vn.ThreadId == _threadId && n.Vn.Sequence >= _sequenceAtStart && n.Owner == 0;

    /// <summary>Marks an intention node that the new state references directly.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void MarkGrafted(Node? n)
    {
        if (_apply && n is not null && Inside(n))
        {
            n.Flags |= NodeFlags.Grafted;
        }
    }

    /// <summary>A state or intention node that the result no longer uses.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Retire(Node n)
    {
        // Intention nodes are recycled by the intention walk; state nodes wait for older states.
        if (_apply && !Inside(n))
        {
            _displaced.Add(n);
        }
    }

    /// <summary>
    /// Node <paramref name="t"/>'s content with the given children: changed in place when
    /// <paramref name="t"/> is fresh, otherwise as an ephemeral copy (copy-on-write).
    /// </summary>
    private Node Make(Node t, Node? left, Node? right)
    {
        if (IsFresh(t))
        {
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

        var e = NewEphemeral();
        e.Key = t.Key;
        e.Payload = t.Payload;
        e.Scv = t.Ncv;
        e.Ssv = t.Nsv;
        e.Left = left;
        e.Right = right;
        e.FixHeight();
        MarkGrafted(left);
        MarkGrafted(right);
        Retire(t);
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
