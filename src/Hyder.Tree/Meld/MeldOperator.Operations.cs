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
        if (_apply && SplitTable is { } table)
        {
            switch (table.Stage(p.Key, p.Payload, _intention.Ordinal))
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
                Retire(l);
            }

            return Join2(left, right);
        }

        if (l is not null)
        {
            Retire(l);
        }

        var x = NewEphemeral();
        x.Key = key;
        x.Payload = settled.Value;
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
}
