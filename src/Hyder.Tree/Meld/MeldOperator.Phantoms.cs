namespace Hyder.Tree.Meld;

public sealed partial class MeldOperator
{
    /// <summary>Checks every range of a node, each cut to <paramref name="kr"/>.</summary>
    private bool PhantomCheck(Node? m, KeyRange[] ranges, in KeyRange kr)
    {
        foreach (var r in ranges)
        {
            if (PhantomCheck(m, r.Intersect(kr)))
            {
                return true;
            }
        }

        return false;
    }

    private static bool AnyContains(KeyRange[] ranges, byte[] key)
    {
        foreach (var r in ranges)
        {
            if (r.Contains(key))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Exact phantom check for a scanned range: true (a conflict) when some key of
    /// <paramref name="range"/> in the state subtree <paramref name="m"/> was inserted or changed
    /// since the transaction's snapshot. Deleted keys are caught by the DependsOn marks of the
    /// scanned nodes themselves.
    /// </summary>
    /// <remarks>
    /// The paper aborts on any change under a DependsOnTree node; comparing with the snapshot
    /// instead keeps false aborts to changes inside the range. A state subtree whose structure
    /// version equals the snapshot's node for the same key is unchanged and is skipped whole.
    /// </remarks>
    private bool PhantomCheck(Node? m, in KeyRange range)
    {
        if (m is null || range.IsEmpty)
        {
            return false;
        }

        _outcome.StateNodesVisited++;
        var s = FindSnapshot(m.Key);
        if (s is not null && s.Nsv == m.Nsv)
        {
            return false;
        }

        // A key new since the snapshot is final for final meld; premeld defers it (see CheckPair).
        if (range.Contains(m.Key) && (s is null ? Undeferred() : s.Ncv != m.Ncv))
        {
            return Conflict(AbortCause.Phantom, m.Key);
        }

        if ((range.Low is null || Keys.Compare(range.Low, m.Key) < 0) && PhantomCheck(m.Left, range))
        {
            return true;
        }

        return (range.High is null || Keys.Compare(range.High, m.Key) > 0) && PhantomCheck(m.Right, range);
    }

    /// <summary>True (a conflict) when state node <paramref name="m"/>'s key or content is not the snapshot's.</summary>
    private bool PhantomKey(Node m)
    {
        var s = FindSnapshot(m.Key);
        return (s is null ? Undeferred() : s.Ncv != m.Ncv) && Conflict(AbortCause.Phantom, m.Key);
    }

    /// <summary>True in final meld; in premeld records that a check was left to final meld, and is false.</summary>
    private bool Undeferred()
    {
        if (_intentionMode)
        {
            _deferred = true;
            return false;
        }

        return true;
    }

    /// <summary>
    /// The transaction's snapshot's node with <paramref name="key"/>, or null. For a premelded
    /// intention that is still the original snapshot, not the premeld input; for a group's second
    /// part's ranges, the second part's snapshot.
    /// </summary>
    private Node? FindSnapshot(byte[] key) => Keys.Find(_phantomBase.Root, key);
}
