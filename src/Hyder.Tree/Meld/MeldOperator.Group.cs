using Hyder.Tree.Commutative;

namespace Hyder.Tree.Meld;

/// <summary>What group meld made of a pair of intentions (Hyder II §4).</summary>
public enum GroupDecision : byte
{
    /// <summary>One group intention stands for both; final meld decides both at once.</summary>
    Grouped,

    /// <summary>The second depends on a key the first wrote: it aborts, and the first goes on alone.</summary>
    SecondAborted,

    /// <summary>The two depend on different versions of one key: the group cannot commit, so both abort.</summary>
    BothAborted,
}

public sealed partial class MeldOperator
{
    private bool _grouping;
    private byte[]? _incompatibleKey;
    private readonly List<KeyRange> _secondRanges = [];

    /// <summary>
    /// True when group meld may pair <paramref name="first"/> with <paramref name="second"/>: the
    /// next ordinal, neither already a group, and the second did not run on a state that includes
    /// the first (then it is not concurrent with it and is melded on its own).
    /// </summary>
    public static bool CanGroup(Intention first, Intention second) =>
        first.IsSealed && second.IsSealed && !first.IsGroup && !second.IsGroup
        && second.FirstOrdinal == first.Ordinal + 1 && second.LatestSnapshotSequence < first.FirstOrdinal
        && first.IsValidated && second.IsValidated;

    /// <summary>
    /// Group meld (Hyder II §4): melds <paramref name="second"/> into <paramref name="first"/> as
    /// if the first were the state, yielding one group intention that final meld decides for both
    /// (docs/meld.md, "Group meld").
    /// </summary>
    /// <remarks>
    /// <para>The group commits iff both would, with one exception: when the second depends on a key
    /// the first wrote (a read, a checked write or delete, or a scanned range holding it), the
    /// second aborts here and the first goes on alone, untouched (<see cref="GroupDecision.SecondAborted"/>;
    /// <paramref name="group"/> is then <paramref name="first"/>). When both depend on one key at
    /// different versions they cannot both commit, so both abort here
    /// (<see cref="GroupDecision.BothAborted"/>). Every other check is left to final meld, which
    /// checks each part's dependencies against the state it melds into: with no dependency of the
    /// second on the first's writes, that is exactly what each would have been checked against.</para>
    /// <para>Consumes what it does not pass on: the parts' nodes the group does not use return to this
    /// operator's pool, and the pins of an aborted part are released.</para>
    /// </remarks>
    public MeldOutcome Group(Intention first, Intention second, out Intention? group, out GroupDecision decision)
    {
        if (!CanGroup(first, second))
        {
            ThrowHelper.ThrowInvalidOperation($"{first} and {second} cannot be grouped");
        }

        Begin(second, lcs: null, ownerLow: first.Ordinal, apply: true, intentionMode: true);
        _grouping = true;
        _incompatibleKey = null;
        _movedRanges.Clear();
        _secondRanges.Clear();
        _outcome.ConflictZoneLength = second.Ordinal - 1 - Math.Min(first.SnapshotSequence, second.OldestSnapshotSequence);
        _outcome.Grouped = true;

        Node? root = null;
        bool conflict;
        try
        {
            conflict = GroupPrepare(first, second) || GroupMeld(first.Root, second.Root, KeyRange.All, KeyRange.All, out root);
        }
        catch
        {
            _fresh.ReturnAllTo(_pool);
            _sequence = _sequenceAtStart;
            throw;
        }
        finally
        {
            _grouping = false;
            _intentionMode = false;
            _intention = null!;
        }

        if (conflict)
        {
            // The exception to fate sharing: the first goes on exactly as it came.
            decision = GroupDecision.SecondAborted;
            group = first;
            _outcome.Grouped = false;
            ClearGrafted(first.Root);
            Discard(second);
        }
        else if (_incompatibleKey is not null)
        {
            decision = GroupDecision.BothAborted;
            group = null;
            _outcome.Cause = AbortCause.FateShared;
            _outcome.ConflictKey = _incompatibleKey;
            Discard(first);
            Discard(second);
        }
        else
        {
            decision = GroupDecision.Grouped;
            _outcome.Committed = true;
            MarkGrafted(root);
            var firstRanges = first.RootRanges;
            if (_movedRanges.Count > 0)
            {
                firstRanges = [.. firstRanges, .. _movedRanges];
            }

            var secondRanges = _secondRanges.Count == 0 ? second.RootRanges : [.. second.RootRanges, .. _secondRanges];
            group = Intention.Grouped(first, second, root, MergeDeletes(first, second), firstRanges, secondRanges);
            first.DropSealOrder();
            second.DropSealOrder();
            RecycleIntention(first.Root, keepGrafted: true);
            RecycleIntention(second.Root, keepGrafted: true);
            _fresh.Clear();
        }

        _outcome.EphemeralNodesCreated = (int)(_sequence - _sequenceAtStart);
        if (decision != GroupDecision.Grouped)
        {
            _fresh.ReturnAllTo(_pool);
            _sequence = _sequenceAtStart;
            _outcome.EphemeralNodesCreated = 0;
        }

        Counters.Add(_outcome);
        return _outcome;
    }

    /// <summary>Returns an aborted part's nodes to the pool and releases its pins.</summary>
    private void Discard(Intention part)
    {
        part.DropSealOrder();
        RecycleIntention(part.Root, keepGrafted: false);
        part.ReleasePins();
    }

    /// <summary>
    /// Before the tree walk: every scanned range of the second part moves to the group's second
    /// root ranges (they are judged against the second part's snapshot, so they cannot stay on
    /// nodes judged against the first's), and is checked against the first part's writes; the
    /// first part's deletes are checked against the second part's nodes and deletes.
    /// </summary>
    /// <returns>True when the second depends on something the first wrote.</returns>
    private bool GroupPrepare(Intention first, Intention second)
    {
        CollectSecondRanges(second.Root);
        foreach (var r in _secondRanges)
        {
            if (RangeHitsFirst(first, r))
            {
                return true;
            }
        }

        foreach (var r in second.RootRanges)
        {
            if (RangeHitsFirst(first, r))
            {
                return true;
            }
        }

        foreach (var d in first.Deletes)
        {
            var p = FindPart(second.Root, d.Key, second.Ordinal);
            if (p is not null)
            {
                if (p.DependsOn || (p.Altered && (p.Flags & NodeFlags.BlindWrite) == 0))
                {
                    return Conflict(AbortCause.GroupConflict, d.Key);
                }

                if (p.HasOperations)
                {
                    // Operations after the first's delete apply to the missing value: the list
                    // starts from a Clear, and the node takes the delete's check as a write
                    // (docs/doppel.md, "Group meld"). It is never grafted (no SSV), and final meld
                    // applies it, so rewriting its list here reaches no state.
                    p.SetOwnPayload(OperationList.Concat(OperationList.Encode(Operation.Clear()), p.Payload));
                    p.Flags = (p.Flags & ~NodeFlags.BlindWrite) | NodeFlags.Altered | (d.Blind ? NodeFlags.BlindWrite : NodeFlags.None);
                    p.Scv = d.Scv;
                    if (!d.Blind)
                    {
                        ForgetStructure(second.Root, d.Key);
                    }
                }
                else if (p.Altered)
                {
                    // A blind write over the first's delete: the key ends up written, and the
                    // delete's check (the version it deleted) moves onto the write. That check
                    // is relative to the first's snapshot, so no node on the way to it may let
                    // final meld graft past it on the strength of the second's snapshot.
                    p.Scv = d.Scv;
                    if (!d.Blind)
                    {
                        p.Flags &= ~NodeFlags.BlindWrite;
                        ForgetStructure(second.Root, d.Key);
                    }
                }
            }
        }

        foreach (var d in second.Deletes)
        {
            if (d.Blind)
            {
                continue;
            }

            if (DeleteList.Find(first.Deletes, d.Key) >= 0)
            {
                return Conflict(AbortCause.GroupConflict, d.Key);
            }

            var q = FindPart(first.Root, d.Key, first.Ordinal);
            if (q is not null && Writes(q))
            {
                return Conflict(AbortCause.GroupConflict, d.Key);
            }
        }

        return false;
    }

    /// <summary>True (a conflict) when the first part wrote or deleted a key in a range the second scanned.</summary>
    private bool RangeHitsFirst(Intention first, in KeyRange r)
    {
        if (FirstWritesIn(first.Root, r) is { } key)
        {
            return Conflict(AbortCause.GroupConflict, key);
        }

        foreach (var d in first.Deletes)
        {
            if (r.Contains(d.Key))
            {
                return Conflict(AbortCause.GroupConflict, d.Key);
            }
        }

        return false;
    }

    /// <summary>Strips the second part's node ranges into <see cref="_secondRanges"/>.</summary>
    private void CollectSecondRanges(Node? n)
    {
        if (n is null || n.Owner != _ownerHigh)
        {
            return;
        }

        _outcome.IntentionNodesVisited++;
        if (n.DependsOnTree)
        {
            _secondRanges.AddRange(n.DependencyRanges!);
            n.Flags &= ~NodeFlags.DependsOnTree;
            n.DependencyRanges = null;
        }

        CollectSecondRanges(n.Left);
        CollectSecondRanges(n.Right);
    }

    /// <summary>The key of a node the first part wrote inside <paramref name="r"/>, or null.</summary>
    private byte[]? FirstWritesIn(Node? n, in KeyRange r)
    {
        if (n is null || n.Owner != _ownerLow)
        {
            return null;
        }

        _outcome.StateNodesVisited++;
        if (Writes(n) && r.Contains(n.Key))
        {
            return n.Key;
        }

        if ((r.Low is null || Keys.Compare(r.Low, n.Key) < 0) && FirstWritesIn(n.Left, r) is { } left)
        {
            return left;
        }

        return r.High is null || Keys.Compare(r.High, n.Key) > 0 ? FirstWritesIn(n.Right, r) : null;
    }

    /// <summary>The node with <paramref name="key"/> among one part's own nodes, or null.</summary>
    private Node? FindPart(Node? n, byte[] key, long owner)
    {
        while (n is not null && n.Owner == owner)
        {
            _outcome.IntentionNodesVisited++;
            var c = Keys.Compare(key, n.Key);
            if (c == 0)
            {
                return n;
            }

            n = c < 0 ? n.Left : n.Right;
        }

        return null;
    }

    /// <summary>Clears the SSV of the second part's nodes on the path to <paramref name="key"/>.</summary>
    private void ForgetStructure(Node? n, byte[] key)
    {
        while (n is not null && n.Owner == _ownerHigh)
        {
            n.Ssv = NodeVersion.None;
            var c = Keys.Compare(key, n.Key);
            if (c == 0)
            {
                return;
            }

            n = c < 0 ? n.Left : n.Right;
        }
    }

    /// <summary>
    /// The group's delete list: the first's deletes, except keys the second then wrote (their
    /// check moved onto the write), and the second's, except blind deletes of keys the first
    /// already deleted. Sorted and unique, as every delete list.
    /// </summary>
    private DeleteEntry[] MergeDeletes(Intention first, Intention second)
    {
        if (first.Deletes.Length == 0 && second.Deletes.Length == 0)
        {
            return [];
        }

        var merged = new List<DeleteEntry>(first.Deletes.Length + second.Deletes.Length);
        int i = 0, j = 0;
        while (i < first.Deletes.Length || j < second.Deletes.Length)
        {
            var c = i == first.Deletes.Length ? 1 : j == second.Deletes.Length ? -1 : Keys.Compare(first.Deletes[i].Key, second.Deletes[j].Key);
            if (c < 0)
            {
                var d = first.Deletes[i++];
                if (FindPart(second.Root, d.Key, second.Ordinal) is not { Altered: true })
                {
                    merged.Add(d);
                }
            }
            else if (c > 0)
            {
                merged.Add(second.Deletes[j++]);
            }
            else
            {
                // Both deleted it; the second's delete is blind (a checked one was a conflict).
                merged.Add(first.Deletes[i++]);
                j++;
            }
        }

        return [.. merged];
    }

    /// <summary>Clears the transient graft marks group meld left on the first part when it goes on alone.</summary>
    private static void ClearGrafted(Node? n)
    {
        if (n is null)
        {
            return;
        }

        n.Flags &= ~NodeFlags.Grafted;

        if (n.Left is { } left && left.Owner == n.Owner)
        {
            ClearGrafted(left);
        }

        if (n.Right is { } right && right.Owner == n.Owner)
        {
            ClearGrafted(right);
        }
    }

    private bool InFirst(Node n) => n.Owner == _ownerLow;

    /// <summary>True when a part's node changes its key's content: a write, or operations (they make a new version).</summary>
    private static bool Writes(Node n) => n.Altered || n.HasOperations;

    private bool InSecond(Node n) => n.Owner == _ownerHigh && !IsFresh(n);

    /// <summary>
    /// The group recursion: <paramref name="l"/> is the first part's subtree holding exactly its
    /// keys in <paramref name="kr"/> (the first part plays the state); <paramref name="n"/> is the
    /// second part's subtree that holds every second-part node in <paramref name="kr"/>, and
    /// <paramref name="ni"/> its key interval in the second part's tree.
    /// </summary>
    /// <returns>True when the second depends on a key the first wrote.</returns>
    private bool GroupMeld(Node? l, Node? n, in KeyRange kr, in KeyRange ni, out Node? result)
    {
        result = l;

        // Nothing of the second part here: the first part's subtree as it is.
        if (n is null || !InSecond(n))
        {
            return false;
        }

        _outcome.IntentionNodesVisited++;

        // Nothing of the first part here: the second part's nodes in this range, as they are.
        if (l is null || !InFirst(l))
        {
            result = Take(n, kr, ni);
            return false;
        }

        _outcome.StateNodesVisited++;
        var c = Keys.Compare(n, l);
        Node? p, rl, rr;
        var leftKr = kr.SplitBelow(l.Key);
        var rightKr = kr.SplitAbove(l.Key);
        if (c == 0)
        {
            p = n;
            if (CheckGroupPair(l, n)
                || GroupMeld(l.Left, n.Left, leftKr, ni.SplitBelow(n.Key), out rl)
                || GroupMeld(l.Right, n.Right, rightKr, ni.SplitAbove(n.Key), out rr))
            {
                return true;
            }
        }
        else
        {
            p = FindPart(n, l.Key, _ownerHigh);
            if (p is not null && CheckGroupPair(l, p))
            {
                return true;
            }

            var t = n;
            var ti = ni;
            if (c < 0)
            {
                // n is left of l: the part of its subtree above l hangs off its right spine.
                if (GroupMeld(l.Left, n, leftKr, ni, out rl))
                {
                    return true;
                }

                while (t is not null && InSecond(t) && Keys.Compare(t, l) <= 0)
                {
                    ti = ti.SplitAbove(t.Key);
                    t = t.Right;
                }

                if (GroupMeld(l.Right, t, rightKr, ti, out rr))
                {
                    return true;
                }
            }
            else
            {
                while (t is not null && InSecond(t) && Keys.Compare(t, l) >= 0)
                {
                    ti = ti.SplitBelow(t.Key);
                    t = t.Left;
                }

                if (GroupMeld(l.Left, t, leftKr, ti, out rl) || GroupMeld(l.Right, n, rightKr, ni, out rr))
                {
                    return true;
                }
            }
        }

        result = CombineGroup(l, p, rl, rr);
        return false;
    }

    /// <summary>
    /// The two parts' nodes for one key: a conflict when the second depends on the first's write;
    /// incompatible (recorded, decided at the end) when both depend on it at different versions.
    /// </summary>
    private bool CheckGroupPair(Node first, Node second)
    {
        var secondDepends = second.DependsOn || (second.Altered && (second.Flags & NodeFlags.BlindWrite) == 0);
        if (Writes(first) && secondDepends)
        {
            return Conflict(AbortCause.GroupConflict, first.Key);
        }

        var firstDepends = first.DependsOn || (first.Altered && (first.Flags & NodeFlags.BlindWrite) == 0);
        if (firstDepends && secondDepends && first.Scv != second.Scv)
        {
            _incompatibleKey ??= first.Key;
        }

        return false;
    }

    /// <summary>A part's node as an operation list: its operations, its write as a Put, or nothing (a read or a path copy).</summary>
    private static ReadOnlySpan<byte> AsOperations(Node n) =>
        n.HasOperations ? n.Payload : n.Altered ? OperationList.Encode(Operation.Put(n.Payload)) : [];

    /// <summary>
    /// The second part's nodes of <paramref name="n"/>'s subtree that lie in <paramref name="kr"/>:
    /// the subtree itself when its whole interval <paramref name="ni"/> does. Pointers outside the
    /// second part that straddle the range are dropped: meld never looks below them.
    /// </summary>
    private Node? Take(Node? n, in KeyRange kr, in KeyRange ni)
    {
        if (n is null)
        {
            return null;
        }

        if (kr.Covers(ni))
        {
            return n;
        }

        if (!InSecond(n))
        {
            return null;
        }

        _outcome.IntentionNodesVisited++;
        if (!kr.AboveLow(n.Key))
        {
            return Take(n.Right, kr, ni.SplitAbove(n.Key));
        }

        if (!kr.BelowHigh(n.Key))
        {
            return Take(n.Left, kr, ni.SplitBelow(n.Key));
        }

        var el = Take(n.Left, kr, ni.SplitBelow(n.Key));
        var er = Take(n.Right, kr, ni.SplitAbove(n.Key));
        return el == n.Left && er == n.Right ? n : Join(el, n, er);
    }

    /// <summary>
    /// The group's node for first-part node <paramref name="l"/>'s key, given the second part's
    /// node with that key (or null) and the grouped children: <paramref name="l"/> when nothing
    /// changed, else a new node carrying both parts' intent (docs/meld.md, "Group meld").
    /// </summary>
    private Node CombineGroup(Node l, Node? p, Node? left, Node? right)
    {
        if (p is null && left == l.Left && right == l.Right)
        {
            return l;
        }

        var x = NewEphemeral();
        x.CopyKeyOf(l);
        x.Owner = _ownerHigh;
        if (l.DependsOnTree)
        {
            _movedRanges.AddRange(l.DependencyRanges!);
        }

        if (p is null)
        {
            x.CopyPayloadOf(l);
            x.Flags = l.Flags & CarriedFlags;
            x.Scv = l.Scv;
        }
        else
        {
            var firstChecks = l.DependsOn || (l.Altered && (l.Flags & NodeFlags.BlindWrite) == 0);
            var secondChecks = p.DependsOn || (p.Altered && (p.Flags & NodeFlags.BlindWrite) == 0);
            var checkedWrite = (l.Altered && (l.Flags & NodeFlags.BlindWrite) == 0) || (p.Altered && (p.Flags & NodeFlags.BlindWrite) == 0);
            x.CopyPayloadOf(p.Altered ? p : l);
            x.Flags = (l.Flags | p.Flags) & (NodeFlags.Altered | NodeFlags.DependsOn);
            if (l.HasOperations || p.HasOperations)
            {
                // The first's operations (or write) then the second's, in log order, as one list:
                // each bounded Add stays, so final meld checks its bound where it belongs.
                x.SetOwnPayload(OperationList.Concat(AsOperations(l), AsOperations(p)));
                x.Flags |= NodeFlags.Operations;
            }

            if (x.Altered && !checkedWrite)
            {
                x.Flags |= NodeFlags.BlindWrite;
            }

            // One SCV holds both parts' expectation: equal when both check it (else incompatible).
            x.Scv = secondChecks ? p.Scv : firstChecks ? l.Scv : p.Altered ? p.Scv : l.Scv;
        }

        return Place(left, x, right);
    }
}
