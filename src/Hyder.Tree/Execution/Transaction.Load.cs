namespace Hyder.Tree;

public sealed partial class Transaction
{
    /// <summary>Builds a perfectly balanced tree of inserted nodes from sorted, distinct pairs (bulk load).</summary>
    internal void LoadSorted(IReadOnlyList<KeyValuePair<byte[], byte[]>> pairs)
    {
        EnsureRunning();
        if (_root is not null)
        {
            ThrowHelper.ThrowInvalidOperation("bulk load needs an empty snapshot");
        }

        for (var i = 1; i < pairs.Count; i++)
        {
            if (Keys.Compare(pairs[i - 1].Key, pairs[i].Key) >= 0)
            {
                ThrowHelper.ThrowArgument(nameof(pairs), $"bulk-load keys must be sorted and distinct (at index {i}: {Keys.Format(pairs[i].Key)})");
            }
        }

        _root = Build(pairs, 0, pairs.Count - 1);
        _wrote = pairs.Count > 0;
    }

    private Node? Build(IReadOnlyList<KeyValuePair<byte[], byte[]>> pairs, int lo, int hi)
    {
        if (lo > hi)
        {
            return null;
        }

        var mid = (lo + hi) >>> 1;
        var n = _pool.Rent();
        n.Key = pairs[mid].Key;
        SetWritten(n, pairs[mid].Value);
        n.Flags = NodeFlags.Altered;
        n.Owner = _token;
        n.Left = Build(pairs, lo, mid - 1);
        n.Right = Build(pairs, mid + 1, hi);
        n.FixHeight();
        return n;
    }
}
