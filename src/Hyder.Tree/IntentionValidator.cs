namespace Hyder.Tree;

/// <summary>
/// Checks a sealed intention against the engine's invariants before meld sees it: keys in order,
/// AVL heights, pointers that resolve to published nodes, metadata that does not contradict
/// itself, a sorted delete list. It depends only on the intention and its snapshot, so every
/// server rejects the same intentions with the same message.
/// </summary>
/// <remarks>
/// Validation runs on the parallel side of a server, never on the final-meld thread (DESIGN §6):
/// a deserializer validates a decoded intention once it has sealed it at its ordinal, and an
/// executor validates its own intention before it appends it (<see cref="ValidateBeforeAppend"/>).
/// Sealing changes only what it writes itself (each inside node's version and owner), so an
/// intention valid before it is sealed is valid after, with the same checks and the same reasons.
/// </remarks>
public static class IntentionValidator
{
    /// <summary>Throws <see cref="IntentionRejectedException"/> naming the first fault found.</summary>
    public static void Validate(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (!intention.IsSealed)
        {
            Reject(intention, "it is not sealed at a log position");
        }

        Check(intention);
    }

    /// <summary>
    /// <see cref="Validate"/> as a verdict, for a pipeline stage that only needs to know whether it
    /// may use the intention: a rejected one goes to final meld untouched, which rejects it in log
    /// order like any server would.
    /// </summary>
    public static bool IsValid(Intention intention)
    {
        try
        {
            Validate(intention);
            return true;
        }
        catch (IntentionRejectedException)
        {
            return false;
        }
    }

    /// <summary>
    /// Checks an executor's own intention before it is sealed and appended: the checks
    /// <see cref="Validate"/> makes, but inside nodes are those the transaction owns, and their
    /// versions are left to the seal that gives them. Throws <see cref="IntentionRejectedException"/>
    /// whose <see cref="IntentionRejectedException.Reason"/> is the one every server would give
    /// for the sealed intention read from the log; marks it validated otherwise.
    /// </summary>
    public static void ValidateBeforeAppend(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (intention.IsSealed || intention.IsGroup || intention.IsPremelded)
        {
            ThrowHelper.ThrowInvalidOperation($"{intention} is not an executor's unsealed intention");
        }

        intention.PrefetchMadeNodes();
        Check(intention);
    }

    private static void Check(Intention intention)
    {
        Subtree(intention, intention.Root, null, null, out var operations);
        if (operations != intention.HasOperations)
        {
            // Final meld's serial shortcut trusts the flag: a list must never be grafted unapplied.
            Reject(intention, operations ? "it holds operations it does not declare" : "it declares operations it does not hold");
        }

        Deletes(intention);
        foreach (var r in intention.RootRanges)
        {
            if (r.IsEmpty)
            {
                Reject(intention, $"root dependency range {r} is empty");
            }
        }

        intention.IsValidated = true;
    }

    /// <returns>The subtree's height; <paramref name="operations"/> says whether an inside node of it carries operations.</returns>
    /// <remarks><paramref name="low"/> and <paramref name="high"/> are the nearest ancestors the subtree lies between: their cached key prefixes settle most comparisons.</remarks>
    private static int Subtree(Intention i, Node? n, Node? low, Node? high, out bool operations)
    {
        operations = false;
        if (n is null)
        {
            return 0;
        }

        if ((n.Flags & NodeFlags.Pooled) != 0)
        {
            Reject(i, $"a pointer leads to a recycled node (below key {(low is null ? "-inf" : Keys.Format(low.Key))})");
        }

        if ((low is not null && Keys.Compare(n, low) <= 0) || (high is not null && Keys.Compare(n, high) >= 0))
        {
            Reject(i, $"key {Keys.Format(n.Key)} is out of order (must lie between {(low is null ? "-inf" : Keys.Format(low.Key))} and {(high is null ? "+inf" : Keys.Format(high.Key))})");
        }

        if (!Inside(i, n))
        {
            // A pointer into the snapshot: it must be a published node of an earlier intention
            // (or an ephemeral node of a state), which keeps its own checked height. Unsealed, the
            // intention's ordinal is not known yet; it follows the snapshot's, which every node the
            // snapshot reaches precedes.
            if (n.Owner < 0 || (i.IsSealed && n.Owner >= i.Ordinal) || !n.Vn.IsSome)
            {
                Reject(i, $"pointer to node {Keys.Format(n.Key)} (owner {n.Owner}, version {n.Vn}) does not resolve to a published node");
            }

            return n.Height;
        }

        Metadata(i, n);
        var hl = Subtree(i, n.Left, low, n, out var leftOperations);
        var hr = Subtree(i, n.Right, n, high, out var rightOperations);
        operations = n.HasOperations || leftOperations || rightOperations;
        if (operations && (n.Ssv.IsSome || n.SubtreeIsOnlyReadDependent))
        {
            // Meld grafts a subtree by its SSV and skips a read-only one: either would put an
            // operation list into the state unapplied (docs/doppel.md).
            Reject(i, $"node {Keys.Format(n.Key)} holds operations in its subtree but claims a structure version or a read-only subtree");
        }

        if (n.Height != Math.Max(hl, hr) + 1 || Math.Abs(hl - hr) > 1)
        {
            Reject(i, $"node {Keys.Format(n.Key)} has height {n.Height} over children of heights {hl} and {hr}");
        }

        if (n.SubtreeIsOnlyReadDependent)
        {
            foreach (var child in (ReadOnlySpan<Node?>)[n.Left, n.Right])
            {
                if (child is not null && Inside(i, child) && !child.SubtreeIsOnlyReadDependent)
                {
                    Reject(i, $"node {Keys.Format(n.Key)} claims a read-only subtree but child {Keys.Format(child.Key)} is not");
                }
            }
        }

        return n.Height;
    }

    private static void Metadata(Intention i, Node n)
    {
        if (n.KeyLength == 0)
        {
            Reject(i, "a node has an empty key");
        }

        if (i.IsSealed && (!n.Vn.IsPersistent || n.Vn.Position != i.Position))
        {
            Reject(i, $"node {Keys.Format(n.Key)} has version {n.Vn}, not one of position {i.Position}");
        }

        if ((n.Flags & NodeFlags.Pooled) != 0)
        {
            Reject(i, $"node {Keys.Format(n.Key)} is marked as recycled");
        }

        if (!n.Altered && !n.HasOperations && !n.Scv.IsSome)
        {
            Reject(i, $"node {Keys.Format(n.Key)} was neither written nor copied from a source (no content version)");
        }

        if (n.HasOperations)
        {
            if (Commutative.OperationList.Check(n.Payload) is { } malformed)
            {
                Reject(i, $"node {Keys.Format(n.Key)} carries a malformed operation list: {malformed}");
            }

            if (n.Altered != Commutative.OperationList.HasWrite(n.Payload))
            {
                Reject(i, $"node {Keys.Format(n.Key)} is {(n.Altered ? "" : "not ")}a write but its operation list {(n.Altered ? "holds no" : "holds a")} put or delete");
            }
        }

        if (n.DependsOn && !n.Scv.IsSome)
        {
            Reject(i, $"node {Keys.Format(n.Key)} depends on a snapshot version it does not name");
        }

        if (n.SubtreeIsOnlyReadDependent && (n.Altered || !n.Ssv.IsSome))
        {
            Reject(i, $"node {Keys.Format(n.Key)} claims a read-only subtree but is altered or has no structure version");
        }

        if ((n.Flags & NodeFlags.BlindWrite) != 0 && (!n.Altered || i.Isolation != IsolationLevel.ReadCommitted))
        {
            Reject(i, $"node {Keys.Format(n.Key)} is a blind write outside a read-committed write");
        }

        if (n.DependsOnTree != (n.DependencyRanges is { Length: > 0 }))
        {
            Reject(i, $"node {Keys.Format(n.Key)} has DependsOnTree {n.DependsOnTree} with {n.DependencyRanges?.Length ?? 0} dependency ranges");
        }

        if (n.DependencyRanges is { } ranges)
        {
            foreach (var r in ranges)
            {
                if (r.IsEmpty)
                {
                    Reject(i, $"node {Keys.Format(n.Key)} depends on an empty range {r}");
                }
            }
        }
    }

    private static void Deletes(Intention i)
    {
        byte[]? previous = null;
        foreach (var d in i.Deletes)
        {
            if (d.Key is not { Length: > 0 } key)
            {
                Reject(i, "the delete list holds an empty key");
                return;
            }

            if (previous is not null && Keys.Compare(previous, key) >= 0)
            {
                Reject(i, $"the delete list is not sorted and unique at {Keys.Format(d.Key)}");
            }

            if (!d.Scv.IsSome)
            {
                Reject(i, $"delete of {Keys.Format(d.Key)} names no deleted version");
            }

            if (d.Blind != (i.Isolation == IsolationLevel.ReadCommitted))
            {
                Reject(i, $"delete of {Keys.Format(d.Key)} is {(d.Blind ? "blind" : "checked")} at {i.Isolation}");
            }

            if (Contains(i.Root, key))
            {
                Reject(i, $"key {Keys.Format(d.Key)} is both deleted and present in the intention's tree");
            }

            previous = key;
        }
    }

    private static bool Contains(Node? n, byte[] key) => Keys.Find(n, key) is not null;

    /// <summary>An inside node: sealed, one of the intention's ordinals; unsealed, one its transaction owns (the seal gives exactly those the ordinal).</summary>
    private static bool Inside(Intention i, Node n) => Serialization.OwnerRange.Of(i).Contains(n);

    [System.Diagnostics.CodeAnalysis.DoesNotReturn]
    private static void Reject(Intention i, string why) =>
        ThrowHelper.ThrowRejected(
            i.IsSealed ? $"intention #{i.Ordinal} at position {i.Position} rejected: " : "the transaction's intention is refused before it is appended: ",
            why);
}
