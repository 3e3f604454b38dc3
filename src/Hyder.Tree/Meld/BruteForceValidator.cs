namespace Hyder.Tree.Meld;

/// <summary>
/// Meld with every optimization off (meld paper App. F): visits every node of the intention and
/// looks its key up in the last committed state, then checks every scanned range key by key. It
/// makes the same decisions as meld and merges nothing; the benchmarks compare the two on the
/// same intentions.
/// </summary>
public sealed class BruteForceValidator
{
    private int _visited;
    private AbortCause _cause;
    private byte[]? _key;
    private Intention _intention = null!;

    /// <summary>Decides whether <paramref name="intention"/> commits against <paramref name="lcs"/>.</summary>
    public MeldOutcome Validate(Intention intention, DatabaseState lcs)
    {
        _visited = 0;
        _cause = AbortCause.None;
        _key = null;
        _intention = intention;
        var committed = (intention.Snapshot == lcs && !intention.HasOperations)
            || (!CheckDeletes(lcs.Root) && !CheckRanges(lcs.Root, intention.RootRanges) && !CheckNodes(intention.Root, lcs.Root));
        _intention = null!;
        return new MeldOutcome
        {
            Committed = committed,
            Cause = _cause,
            ConflictKey = _key,
            StateNodesVisited = _visited,
            ConflictZoneLength = intention.Ordinal - 1 - intention.SnapshotSequence,
        };
    }

    private bool CheckNodes(Node? x, Node? lcsRoot)
    {
        if (x is null || x.Owner != _intention.Ordinal)
        {
            return false;
        }

        _visited++;
        if (x.Altered || x.DependsOn || x.HasOperations)
        {
            var m = Find(lcsRoot, x.Key);
            var current = m is null ? NodeVersion.None : m.Ncv;
            if (x.Altered && (x.Flags & NodeFlags.BlindWrite) == 0 && current != x.Scv)
            {
                return Fail(AbortCause.WriteWrite, x.Key);
            }

            if (x.DependsOn && current != x.Scv)
            {
                return Fail(AbortCause.ReadWrite, x.Key);
            }

            // Operations apply to the key's value in the last committed state, in log order.
            var fold = x.HasOperations ? Commutative.OperationFold.Apply(x.Payload, m?.Payload, out _) : Commutative.FoldError.None;
            if (fold != Commutative.FoldError.None)
            {
                return Fail(fold == Commutative.FoldError.BoundViolated ? AbortCause.BoundViolated : AbortCause.TypeMismatch, x.Key);
            }
        }

        if (x.DependsOnTree && CheckRanges(lcsRoot, x.DependencyRanges!))
        {
            return true;
        }

        return CheckNodes(x.Left, lcsRoot) || CheckNodes(x.Right, lcsRoot);
    }

    private bool CheckDeletes(Node? lcsRoot)
    {
        foreach (var d in _intention.Deletes)
        {
            if (d.Blind)
            {
                continue;
            }

            var m = Find(lcsRoot, d.Key);
            if (m is null || m.Ncv != d.Scv)
            {
                return Fail(AbortCause.DeleteConflict, d.Key);
            }
        }

        return false;
    }

    /// <summary>Every key of each range, in the state and in the snapshot, must carry the same content version.</summary>
    private bool CheckRanges(Node? lcsRoot, KeyRange[] ranges)
    {
        foreach (var r in ranges)
        {
            if (Inconsistent(lcsRoot, _intention.Snapshot.Root, r) || Inconsistent(_intention.Snapshot.Root, lcsRoot, r))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>True when some key of <paramref name="from"/> in the range is missing or different in <paramref name="otherRoot"/>.</summary>
    private bool Inconsistent(Node? from, Node? otherRoot, in KeyRange range)
    {
        if (from is null)
        {
            return false;
        }

        _visited++;
        if ((range.Low is null || Keys.Compare(range.Low, from.Key) < 0) && Inconsistent(from.Left, otherRoot, range))
        {
            return true;
        }

        if (range.Contains(from.Key))
        {
            var o = Find(otherRoot, from.Key);
            if (o is null || o.Ncv != from.Ncv)
            {
                return Fail(AbortCause.Phantom, from.Key);
            }
        }

        return (range.High is null || Keys.Compare(range.High, from.Key) > 0) && Inconsistent(from.Right, otherRoot, range);
    }

    private Node? Find(Node? n, byte[] key) => Keys.Find(n, key, ref _visited);

    private bool Fail(AbortCause cause, byte[] key)
    {
        _cause = cause;
        _key = key;
        return true;
    }
}
