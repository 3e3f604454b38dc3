using Hyder.Tree.Commutative;

namespace Hyder.Tree;

public sealed partial class Transaction
{
    /// <summary>Reads a key (seeing this transaction's own writes).</summary>
    /// <returns>True and the payload when the key exists.</returns>
    public bool TryGet(byte[] key, out byte[] payload)
    {
        EnsureRunning();
        ValidateKey(key);
        RefuseSplitKey(key);
        var found = Find(key);
        var view = found is null ? null : ViewOf(found);
        if (view is null)
        {
            AbsentRead(key, found);
            payload = [];
            return false;
        }

        if (TracksReads)
        {
            ReadMark(key);
        }

        payload = view;
        return true;
    }

    /// <summary>
    /// Reads up to <paramref name="limit"/> pairs with keys in [<paramref name="low"/>,
    /// <paramref name="high"/>] in ascending order (null bounds are open), appending them to
    /// <paramref name="results"/>. At serializable the range actually covered becomes a phantom
    /// dependency: up to the last key returned when the limit was reached.
    /// </summary>
    /// <returns>The number of pairs appended.</returns>
    public int Scan(byte[]? low, byte[]? high, int limit, List<KeyValuePair<byte[], byte[]>> results) =>
        Scan(new KeyRange(low, true, high, true), limit, results);

    /// <summary>
    /// Reads up to <paramref name="limit"/> pairs with keys in <paramref name="range"/> (each bound
    /// inclusive or exclusive) in ascending order; the phantom dependency at serializable is
    /// exactly the range covered, so an exclusive bound's key is not depended on.
    /// </summary>
    /// <returns>The number of pairs appended.</returns>
    public int Scan(in KeyRange range, int limit, List<KeyValuePair<byte[], byte[]>> results)
    {
        EnsureRunning();
        ArgumentNullException.ThrowIfNull(results);
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(limit);
        if (range.IsEmpty)
        {
            return 0;
        }

        if (Snapshot.SplitKeys is { } split && split.Intersects(range))
        {
            throw new SplitKeyReadException(range.Low ?? [], Snapshot.Sequence);
        }

        var start = results.Count;

        // An unlimited scan (int.MaxValue) appending to a list that holds pairs must not overflow.
        Collect(_root, range, (int)Math.Min((long)limit + start, int.MaxValue), results);
        var count = results.Count - start;
        if (TracksReads)
        {
            for (var i = start; i < results.Count; i++)
            {
                var marked = ReadMark(results[i].Key);
                results[i] = new KeyValuePair<byte[], byte[]>(marked.Key, ViewOf(marked)!);
            }
        }

        if (Isolation == IsolationLevel.Serializable)
        {
            var covered = count == limit ? new KeyRange(range.Low, range.LowInclusive, results[^1].Key, true) : range;
            (_ranges ??= []).Add(covered);
        }

        return count;
    }

    private void Collect(Node? n, in KeyRange range, int until, List<KeyValuePair<byte[], byte[]>> results)
    {
        while (n is not null && results.Count < until)
        {
            if (!range.AboveLow(n.Key))
            {
                n = n.Right;
                continue;
            }

            if (!range.BelowHigh(n.Key))
            {
                n = n.Left;
                continue;
            }

            Collect(n.Left, range, until, results);
            if (results.Count >= until)
            {
                return;
            }

            if (ViewOf(n) is { } view)
            {
                results.Add(new KeyValuePair<byte[], byte[]>(n.Key, view));
            }

            n = n.Right;
        }
    }

    /// <summary>
    /// Throws <see cref="SplitKeyReadException"/> when the snapshot lies inside a split phase that
    /// splits <paramref name="key"/>: its value and version there may be behind the side table
    /// (Doppel §5), so neither a read nor a checked write may use them, at any isolation level.
    /// Commutative operations need neither and are never refused.
    /// </summary>
    private void RefuseSplitKey(byte[] key)
    {
        if (Snapshot.SplitKeys is { } split && split.Contains(key))
        {
            throw new SplitKeyReadException(key, Snapshot.Sequence);
        }
    }

    /// <summary>The working tree's node for the key, without copying anything.</summary>
    private Node? Find(byte[] key) => Keys.Find(_root, key);

    /// <summary>
    /// What the transaction sees of a node of its working tree: the payload, or for a node with
    /// operations the snapshot's value with them applied (null: absent). An operation that will
    /// make meld abort the transaction is skipped here.
    /// </summary>
    private static byte[]? ViewOf(Node n)
    {
        if (!n.HasOperations)
        {
            return n.Payload;
        }

        OperationFold.Apply(n.Payload, n.Source?.Payload, out var view, lenient: true);
        return view;
    }

    /// <summary>
    /// Marks a read of a present key (<see cref="MarkRead"/>); a key whose value the transaction
    /// sees through its own pending operations on a key absent from its snapshot depends, at
    /// serializable, on that absence (a point range), as an absent-key read does.
    /// </summary>
    private Node ReadMark(byte[] key)
    {
        var n = MarkRead(key);
        if (n.HasOperations && !n.Altered && !n.Scv.IsSome && Isolation == IsolationLevel.Serializable)
        {
            (_ranges ??= []).Add(KeyRange.Closed(key, key));
        }

        return n;
    }

    /// <summary>Copies the path to an existing key and marks the node read (DependsOn).</summary>
    private Node MarkRead(byte[] key)
    {
        ref var slot = ref _root;
        var prefix = Keys.Prefix(key);
        while (true)
        {
            var s = slot!;
            var c = Keys.Compare(key, prefix, s);
            var n = Own(s);
            slot = n;
            if (c == 0)
            {
                // Reading one's own insert depends on nothing in the snapshot.
                if (n.Scv.IsSome)
                {
                    n.Flags |= NodeFlags.DependsOn;
                }

                return n;
            }

            slot = ref c < 0 ? ref n.Left : ref n.Right;
        }
    }

    private static void ValidateKey(byte[] key)
    {
        ArgumentNullException.ThrowIfNull(key);
        if (key.Length == 0)
        {
            ThrowHelper.ThrowArgument(nameof(key), "a key must not be empty");
        }
    }
}
