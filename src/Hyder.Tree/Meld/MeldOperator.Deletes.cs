namespace Hyder.Tree.Meld;

public sealed partial class MeldOperator
{
    /// <summary>
    /// Case (i) of §6: every key the intention deleted must still hold, in the state, the content
    /// version the transaction deleted (unless the delete is blind).
    /// </summary>
    private bool CheckDeletes(Node? lcsRoot)
    {
        foreach (var d in _intention.Deletes)
        {
            if (d.Blind)
            {
                continue;
            }

            var m = FindState(lcsRoot, d.Key);
            if (m is null || m.Ncv != d.Scv)
            {
                return Conflict(AbortCause.DeleteConflict, d.Key);
            }
        }

        return false;
    }

    /// <summary>
    /// Removes the deleted keys that the merged tree still holds (they came back with a state
    /// subtree the intention did not replace); retires the state node of each deleted key.
    /// </summary>
    private Node? ApplyDeletes(Node? oldRoot, Node? root)
    {
        foreach (var d in _intention.Deletes)
        {
            root = Remove(root, d.Key, out var removed);
            if (!removed)
            {
                // A graft already dropped it: the old state's node for the key is displaced.
                var old = FindState(oldRoot, d.Key);
                if (old is not null)
                {
                    Retire(old, null);
                }
            }
        }

        return root;
    }

    /// <summary>Copy-on-write removal of <paramref name="key"/>, rebalancing on the way up.</summary>
    private Node? Remove(Node? t, byte[] key, out bool removed)
    {
        removed = false;
        if (t is null)
        {
            return null;
        }

        _outcome.StateNodesVisited++;
        var c = Keys.Compare(key, t.Key);
        if (c < 0)
        {
            var nl = Remove(t.Left, key, out removed);
            return removed ? Join(nl, t, t.Right) : t;
        }

        if (c > 0)
        {
            var nr = Remove(t.Right, key, out removed);
            return removed ? Join(t.Left, t, nr) : t;
        }

        // Premeld of a group: the first part's write of a key the second deleted blind carries
        // the first's check, which final meld must still make before it deletes the key; its
        // operations likewise (their bounds are checked before the delete).
        if (_intentionMode && Inside(t) && (t.Flags & (NodeFlags.Altered | NodeFlags.DependsOn | NodeFlags.Operations)) != 0)
        {
            return t;
        }

        // Premeld of a group: the first part's node for the key may carry its scanned ranges (a
        // read of an absent key next to it); the node goes, and the output checks them at its root.
        MoveRanges(t);
        removed = true;
        Retire(t, null);
        return Join2(t.Left, t.Right);
    }

    /// <summary>The state node with <paramref name="key"/>, or null.</summary>
    private Node? FindState(Node? n, byte[] key) => Keys.Find(n, key, ref _outcome.StateNodesVisited);
}
