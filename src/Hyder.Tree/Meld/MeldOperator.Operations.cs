using Hyder.Tree.Memory;
using Hyder.Tree.Commutative;

namespace Hyder.Tree.Meld;

public sealed partial class MeldOperator
{
    /// <summary>
    /// The split phase's side table (docs/doppel.md, "The seam"), or null: final meld then applies
    /// every operation list to the tree. Consulted only by <see cref="Apply"/>.
    /// </summary>
    public ISplitTable? SplitTable { get; set; }

    private bool _staged;

    /// <summary>What final meld does with one node's operation list.</summary>
    private readonly struct Settled(bool staged, byte[]? value)
    {
        /// <summary>The split table took the list: the key's node in the state stays as it is.</summary>
        public bool Staged { get; } = staged;

        /// <summary>Otherwise the key's new value (null: absent).</summary>
        public byte[]? Value { get; } = value;
    }

    /// <summary>True when final meld (not premeld or group meld) must apply <paramref name="p"/>'s operations now.</summary>
    private bool Settles(Node? p) => p is not null && p.HasOperations && !_intentionMode;

    /// <summary>
    /// Applies intention node <paramref name="p"/>'s operation list to the key's value in the state
    /// (<paramref name="l"/>, null when absent), in log order: this is where a bounded Add is checked,
    /// exactly. True (a conflict) when the list fails; otherwise <paramref name="settled"/> holds the
    /// result, or says the split table staged the list.
    /// </summary>
    private bool Settle(Node? l, Node p, out Settled settled)
    {
        settled = default;
        _outcome.OperationNodes++;
        // A group whose second part deleted the key after the first's operations carries both the
        // list and a delete: the tree applies them together (the table has not changed the key,
        // or SplitConflict would have aborted the group).
        if (_apply && SplitTable is { } table && DeleteList.Find(_intention.Deletes, p.Key) < 0)
        {
            switch (table.Stage(p.Key, p.Payload, l?.Payload, _intention.Ordinal))
            {
                case SplitStatus.Staged:
                    _staged = true;
                    settled = new Settled(staged: true, null);
                    return false;
                case SplitStatus.BoundViolated:
                    _staged = true;
                    return Conflict(AbortCause.BoundViolated, p.Key);
                case SplitStatus.TypeMismatch:
                    _staged = true;
                    return Conflict(AbortCause.TypeMismatch, p.Key);
            }
        }

        switch (OperationFold.Apply(p.Payload, l?.Payload, out var value))
        {
            case FoldError.BoundViolated:
                return Conflict(AbortCause.BoundViolated, p.Key);
            case FoldError.TypeMismatch:
                return Conflict(AbortCause.TypeMismatch, p.Key);
        }

        settled = new Settled(staged: false, value);
        return false;
    }

    /// <summary>
    /// The state's node for <paramref name="l"/>'s key (or, with <paramref name="l"/> null, a key
    /// the state does not hold) after final meld applied an operation list: a new ephemeral node
    /// with the value, altered (its content version is its own, so a later reader of the old value
    /// conflicts and a checkpoint writes the value in full), balanced with the melded children; or
    /// just the children when the list left the key absent.
    /// </summary>
    private Node? Materialize(Node? l, byte[] key, in Settled settled, Node? left, Node? right)
    {
        if (settled.Staged)
        {
            return l is null ? Join2(left, right) : Combine(l, null, left, right);
        }

        if (settled.Value is null)
        {
            // The key ends absent. Its state node is retired here, unless the intention's delete
            // list names the key too (a group whose second part deleted it blind): then
            // ApplyDeletes finds it gone from the merged tree and retires it, once.
            if (l is not null && DeleteList.Find(_intention.Deletes, key) < 0)
            {
                Retire(l, null);
            }

            return Join2(left, right);
        }

        if (l is not null)
        {
            Retire(l, settled.Value);
        }

        var x = NewEphemeral();
        x.Key = key;
        if (ReferenceEquals(settled.Value, l?.Payload))
        {
            // The operations left the value as it was: the same array, still the key's alone.
            x.CopyPayloadOf(l!);
        }
        else
        {
            x.SetOwnPayload(settled.Value);
        }
        x.Flags = NodeFlags.Altered;
        x.Scv = l?.Ncv ?? NodeVersion.None;
        x.Ssv = l?.Nsv ?? NodeVersion.None;
        return Join(left, x, right);
    }

    /// <summary>Tells the split table how the meld that staged into it ended.</summary>
    private void FinishStaging()
    {
        if (!_staged)
        {
            return;
        }

        _staged = false;
        if (_outcome.Committed)
        {
            SplitTable!.Commit(_intention.Ordinal);
        }
        else
        {
            SplitTable!.Abort(_intention.Ordinal);
        }
    }

    /// <summary>
    /// True (a conflict, <see cref="AbortCause.SplitPhase"/>) when the intention read, scanned,
    /// wrote or deleted a key that the split table changed in this phase: the tree still holds the
    /// key's value from before the phase, so meld's version checks cannot see those changes.
    /// Operations alone on such a key do not conflict; they are staged.
    /// </summary>
    private bool SplitConflict(Intention i, ISplitTable table)
    {
        var changed = table.ChangedKeys;
        for (var k = 0; k < changed.Count; k++)
        {
            var key = changed[k];
            if (AnyContains(i.RootRanges, key) || AnyContains(i.SecondRootRanges, key) || DeleteList.Find(i.Deletes, key) >= 0 || DependsOnKey(i.Root, key))
            {
                return Conflict(AbortCause.SplitPhase, key);
            }
        }

        return false;
    }

    /// <summary>
    /// True when every node of the intention is a path node or carries operations only, on a split
    /// key: the intention changes nothing but the side table, so final meld stages its lists
    /// without walking the state (no conflict is possible: operations never conflict).
    /// </summary>
    private bool OnlySplitOperations(Node? n, ISplitTable table)
    {
        if (n is null || !Inside(n))
        {
            return true;
        }

        _outcome.IntentionNodesVisited++;
        if ((n.Flags & (NodeFlags.Altered | NodeFlags.DependsOn | NodeFlags.DependsOnTree)) != 0 || (n.HasOperations && !table.IsSplit(n.Key)))
        {
            return false;
        }

        return OnlySplitOperations(n.Left, table) && OnlySplitOperations(n.Right, table);
    }

    /// <summary>Stages every list of an intention <see cref="OnlySplitOperations"/> accepted; true (a conflict) when one fails.</summary>
    private bool StageAll(Node? n, Node? state, ISplitTable table)
    {
        if (n is null || !Inside(n))
        {
            return false;
        }

        if (n.HasOperations)
        {
            _outcome.OperationNodes++;
            var visits = 0;
            var current = table.IsChanged(n.Key) ? null : Keys.Find(state, n.Key, ref visits)?.Payload;
            _outcome.StateNodesVisited += visits;
            _staged = true;
            switch (table.Stage(n.Key, n.Payload, current, _intention.Ordinal))
            {
                case SplitStatus.Staged:
                    break;
                case SplitStatus.BoundViolated:
                    return Conflict(AbortCause.BoundViolated, n.Key);
                case SplitStatus.TypeMismatch:
                    return Conflict(AbortCause.TypeMismatch, n.Key);
                default:
                    ThrowHelper.ThrowInvariant($"the split table refused the operations on split key {Keys.Format(n.Key)}");
                    break;
            }
        }

        return StageAll(n.Left, state, table) || StageAll(n.Right, state, table);
    }

    /// <summary>
    /// True when the intention's tree reads or writes <paramref name="key"/>, or a scanned range on
    /// the path to it covers it (a range hangs on its lowest common ancestor, so it lies on the path
    /// to every key it covers). Only the intention's own nodes are looked at.
    /// </summary>
    private bool DependsOnKey(Node? n, byte[] key)
    {
        var prefix = Keys.Prefix(key);
        while (n is not null && Inside(n))
        {
            _outcome.IntentionNodesVisited++;
            if (n.DependencyRanges is { } ranges && AnyContains(ranges, key))
            {
                return true;
            }

            var c = Keys.Compare(key, prefix, n);
            if (c == 0)
            {
                return (n.Flags & (NodeFlags.DependsOn | NodeFlags.Altered)) != 0;
            }

            n = c < 0 ? n.Left : n.Right;
        }

        return false;
    }

    /// <summary>
    /// Reconciliation (Doppel §5; docs/doppel.md, "Split phases"): writes each split key's value
    /// from the side table into the tree rooted at <paramref name="root"/>, one path copy per key,
    /// with this operator's next ephemeral ids, so every server builds the same nodes. Each written
    /// node is altered (its content version is its own: a transaction that read the key before
    /// conflicts with it as with a write).
    /// </summary>
    /// <param name="root">The last committed state's root (after the phase's last ordinal).</param>
    /// <param name="values">Keys and values, ascending by key, distinct.</param>
    /// <param name="displaced">The state nodes the new tree no longer reaches, to retire with the new state.</param>
    /// <returns>The new root.</returns>
    public Node? Reconcile(Node? root, IReadOnlyList<KeyValuePair<byte[], byte[]>> values, out NodeList displaced)
    {
        ArgumentNullException.ThrowIfNull(values);

        // Nothing is inside: every node met is a state node, copied on write and retired.
        _intention = null!;
        _state = null;
        _ownerLow = long.MaxValue;
        _ownerHigh = long.MinValue;
        _apply = true;
        _intentionMode = false;
        _outputIsIntention = false;
        _decideOnly = false;
        _sequenceAtStart = _sequence;
        _outcome = default;
        _dying.Clear();
        for (var i = 0; i < values.Count; i++)
        {
            var (key, value) = values[i];
            if (i > 0 && Keys.Compare(values[i - 1].Key, key) >= 0)
            {
                ThrowHelper.ThrowInvalidOperation("reconciliation values must be in ascending key order, each key once");
            }

            root = Upsert(root, key, Keys.Prefix(key), value);
        }

        _fresh.Clear();
        MarkDyingPayloads();
        displaced = _displaced;
        _displaced = _spareLists.Count > 0 ? _spareLists.Pop() : new NodeList(256);
        return root;
    }

    private Node Upsert(Node? t, byte[] key, ulong prefix, byte[] value)
    {
        if (t is null)
        {
            var x = NewEphemeral();
            x.Key = key;
            x.SetOwnPayload(value);
            x.Flags = NodeFlags.Altered;
            x.Scv = NodeVersion.None;
            x.Ssv = NodeVersion.None;
            return Join(null, x, null);
        }

        var c = Keys.Compare(key, prefix, t);
        if (c == 0)
        {
            Retire(t, value);
            var x = NewEphemeral();
            x.Key = key;
            x.SetOwnPayload(value);
            x.Flags = NodeFlags.Altered;
            x.Scv = t.Ncv;
            x.Ssv = t.Nsv;
            return Join(t.Left, x, t.Right);
        }

        return c < 0 ? Join(Upsert(t.Left, key, prefix, value), t, t.Right) : Join(t.Left, t, Upsert(t.Right, key, prefix, value));
    }
}
