namespace Hyder.Tree.Meld;

public sealed partial class MeldOperator
{
    /// <summary>
    /// Melds the intention subtree <paramref name="n"/> into the state subtree <paramref name="l"/>
    /// over the key range <paramref name="kr"/> (Appendix C's <c>Meld</c>; with
    /// <paramref name="build"/> false it is <c>MeldNoEphem</c>: checks only, makes nothing).
    /// </summary>
    /// <remarks>
    /// Invariants: <paramref name="l"/> is the state's subtree holding exactly the state's keys in
    /// <paramref name="kr"/>; <paramref name="n"/>'s subtree holds every intention node whose key
    /// is in <paramref name="kr"/> (it may hold more, outside the range). The result holds the
    /// merged keys of <paramref name="kr"/> only.
    /// </remarks>
    /// <returns>True when a conflict was found (the outcome says which).</returns>
    private bool Meld(Node? l, Node? n, in KeyRange kr, bool build, out Node? result)
    {
        result = l;

        // Grafting-lcs: no intention node lies in this range (line 1 and line 10).
        if (n is null || !Inside(n))
        {
            return false;
        }

        _outcome.IntentionNodesVisited++;

        // Read-only subtree: check without making nodes, keep the state's subtree (lines 3-7).
        // Premeld keeps going instead: its output must keep the reads (DESIGN §12, second trap).
        if (build && n.SubtreeIsOnlyReadDependent && !_intentionMode)
        {
            return Meld(l, n, kr, build: false, out _);
        }

        // The state has no key in this range: pick the intention's nodes that belong here (line 8).
        if (l is null)
        {
            if (Extract(n, kr, build, out result))
            {
                return true;
            }

            return false;
        }

        _outcome.StateNodesVisited++;

        // Grafting-intention: nothing changed under l since the transaction's snapshot (line 12).
        if (n.Ssv == l.Nsv)
        {
            if (!kr.Contains(n.Key))
            {
                ThrowHelper.ThrowRejected(
                    $"intention node {Keys.Format(n.Key)} claims the structure version of state node {Keys.Format(l.Key)} but lies outside its range {kr}");
            }

            // Published (read-only copies swapped back, sources retired) only after the whole
            // recursion: later checks of this meld may still walk through this subtree.
            result = n;
            return false;
        }

        var c = Keys.Compare(n, l);
        return c == 0 ? Symmetric(l, n, kr, build, out result) : Asymmetric(l, n, c, kr, build, out result);
    }

    /// <summary>The node checks of §7.1 / Hyder II App. A, comparing versions (DESIGN §12, first trap).</summary>
    private bool CheckPair(Node l, Node n, in KeyRange kr)
    {
        if (n.DependsOnTree)
        {
            if (PhantomCheck(l, n.DependencyRanges!, kr))
            {
                return true;
            }

            MoveRanges(n);
        }

        // A node that neither wrote nor read the key checks nothing: a path copy, or operations
        // only, which apply on top of whatever the conflict zone left (docs/doppel.md).
        if (n.Scv != l.Ncv && (n.Altered || n.DependsOn))
        {
            // Premeld cannot decide "expected absent, found present": the key may be deleted again
            // before final meld, where absence is unchanged. It defers the check (the output
            // keeps SCV none); every other change of version is final, since versions never recur.
            if (_intentionMode && !n.Scv.IsSome)
            {
                _deferred = true;
                return false;
            }

            if (n.Altered && (n.Flags & NodeFlags.BlindWrite) == 0)
            {
                return Conflict(AbortCause.WriteWrite, n.Key);
            }

            if (n.DependsOn)
            {
                return Conflict(AbortCause.ReadWrite, n.Key);
            }
        }

        return false;
    }

    /// <summary>Same key in the intention and the state: meld children pairwise.</summary>
    private bool Symmetric(Node l, Node n, in KeyRange kr, bool build, out Node? result)
    {
        result = l;
        if (CheckPair(l, n, kr))
        {
            return true;
        }

        Settled settled = default;
        var settles = Settles(n);
        if (settles && Settle(l, n, out settled))
        {
            return true;
        }

        Node? rl = l.Left, rr = l.Right;
        if (n.Left is not null && Meld(l.Left, n.Left, kr.SplitBelow(l.Key), build, out rl))
        {
            return true;
        }

        if (n.Right is not null && Meld(l.Right, n.Right, kr.SplitAbove(l.Key), build, out rr))
        {
            return true;
        }

        if (build)
        {
            result = settles ? Materialize(l, l.Key, settled, rl, rr) : Combine(l, n, rl, rr);
        }

        return false;
    }

    /// <summary>
    /// Different keys (the trees diverged by inserts, deletes or rotations): split the intention
    /// subtree at the state node's key (§7.2, lines 27-43).
    /// </summary>
    private bool Asymmetric(Node l, Node n, int nVsL, in KeyRange kr, bool build, out Node? result)
    {
        result = l;

        // The state node's key is excluded from both recursive calls below, so it is checked
        // here: against the intention's node with that key, if any, and against every scanned
        // range that covers it (their nodes all lie on the search path for the key).
        if (FindInside(n, l, out var p))
        {
            return true;
        }

        Settled settled = default;
        var settles = Settles(p);
        if (p is not null)
        {
            _outcome.IntentionNodesVisited++;
            if (CheckPair(l, p, kr) || (settles && Settle(l, p, out settled)))
            {
                return true;
            }
        }

        var leftKr = kr.SplitBelow(l.Key);
        var rightKr = kr.SplitAbove(l.Key);
        Node? rl, rr;
        if (nVsL < 0)
        {
            // n is left of l: all of n's subtree may hold keys below l; the part above l hangs
            // off n's right spine.
            if (Meld(l.Left, n, leftKr, build, out rl))
            {
                return true;
            }

            var t = n;
            while (t is not null && Inside(t) && Keys.Compare(t, l) <= 0)
            {
                if (t.DependsOnTree && t != p)
                {
                    if (PhantomCheck(l.Right, t.DependencyRanges!, rightKr))
                    {
                        return true;
                    }

                    MoveRanges(t);
                }

                t = t.Right;
            }

            if (Meld(l.Right, t, rightKr, build, out rr))
            {
                return true;
            }
        }
        else
        {
            var t = n;
            while (t is not null && Inside(t) && Keys.Compare(t, l) >= 0)
            {
                if (t.DependsOnTree && t != p)
                {
                    if (PhantomCheck(l.Left, t.DependencyRanges!, leftKr))
                    {
                        return true;
                    }

                    MoveRanges(t);
                }

                t = t.Left;
            }

            if (Meld(l.Left, t, leftKr, build, out rl))
            {
                return true;
            }

            if (Meld(l.Right, n, rightKr, build, out rr))
            {
                return true;
            }
        }

        if (build)
        {
            result = settles ? Materialize(l, l.Key, settled, rl, rr) : Combine(l, p, rl, rr);
        }

        return false;
    }

    /// <summary>
    /// The state has no key in <paramref name="kr"/>: keep the intention's inserts (and blind
    /// writes) that lie there; a read or an update of a key that is gone is a conflict; nodes that
    /// were only on a path are dropped (their keys were deleted in the conflict zone).
    /// </summary>
    private bool Extract(Node? n, in KeyRange kr, bool build, out Node? result)
    {
        result = null;
        while (true)
        {
            if (n is null || !Inside(n))
            {
                return false;
            }

            _outcome.IntentionNodesVisited++;
            if (!kr.AboveLow(n.Key))
            {
                n = n.Right;
            }
            else if (!kr.BelowHigh(n.Key))
            {
                n = n.Left;
            }
            else
            {
                break;
            }
        }

        bool keep;
        Settled settled = default;
        var settles = Settles(n);
        if (n.Altered)
        {
            if (n.Scv.IsSome && (n.Flags & NodeFlags.BlindWrite) == 0)
            {
                return Conflict(AbortCause.WriteWrite, n.Key);
            }

            // A group's blind write over its first part's read still needs the key to be there.
            if (n.Scv.IsSome && n.DependsOn)
            {
                return Conflict(AbortCause.ReadWrite, n.Key);
            }

            keep = true;
        }
        else if (n.DependsOn)
        {
            return Conflict(AbortCause.ReadWrite, n.Key);
        }
        else if (n.HasOperations)
        {
            // Operations on a key the state does not hold: they apply to the missing value.
            keep = true;
        }
        else
        {
            keep = false;

            // The node carrying these ranges leaves the tree: the output checks them at its root.
            MoveRanges(n);
        }

        if (settles && Settle(null, n, out settled))
        {
            return true;
        }

        if (Extract(n.Left, kr.SplitBelow(n.Key), build, out var el) || Extract(n.Right, kr.SplitAbove(n.Key), build, out var er))
        {
            return true;
        }

        if (build)
        {
            if (settles)
            {
                result = Materialize(null, n.Key, settled, el, er);
            }
            else if (keep)
            {
                // Reused or copied in a new place: its ranges move to the root.
                MoveRanges(n);

                if (el == n.Left && er == n.Right)
                {
                    // Its key is not in the state (a blind write of a deleted key, or an insert), so
                    // the node it was copied from, if any, is no longer there to be replaced.
                    if (_apply)
                    {
                        n.Source = null;
                    }

                    result = n;
                }
                else
                {
                    result = Join(el, n, er);
                }
            }
            else
            {
                result = Join2(el, er);
            }
        }

        return false;
    }

    /// <summary>
    /// Finds the inside node with <paramref name="l"/>'s key in <paramref name="n"/>'s subtree
    /// (<paramref name="found"/>, or null) and checks the key against the dependency ranges on the
    /// way: true when the key is a phantom for one of them.
    /// </summary>
    private bool FindInside(Node? n, Node l, out Node? found)
    {
        found = null;
        var key = l.Key;
        while (n is not null && Inside(n))
        {
            var c = Keys.Compare(l, n);
            if (c == 0)
            {
                found = n;
                return false;
            }

            if (n.DependsOnTree && AnyContains(n.DependencyRanges!, key))
            {
                if (PhantomKey(l))
                {
                    return true;
                }

                MoveRanges(n);
            }

            n = c < 0 ? n.Left : n.Right;
        }

        return false;
    }
}
