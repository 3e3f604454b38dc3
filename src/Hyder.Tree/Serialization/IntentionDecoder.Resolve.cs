namespace Hyder.Tree.Serialization;

public static partial class IntentionDecoder
{
    /// <summary>
    /// A place in the snapshot: a node and the exclusive key bounds its ancestors give its subtree
    /// (null for unbounded).
    /// </summary>
    private readonly record struct Place(Node? Node, byte[]? Low, byte[]? High);

    /// <summary>An inside node to resolve, with its key interval in the intention and its snapshot anchor.</summary>
    private readonly record struct Work(int Index, byte[]? Low, byte[]? High, Place Anchor);

    /// <summary>
    /// Resolves every outside reference of <paramref name="image"/> to <paramref name="snapshot"/>'s
    /// node objects, top-down, and sets <see cref="Node.Source"/> on copied nodes; then checks heights.
    /// </summary>
    /// <remarks>
    /// Each inside node carries an anchor: the first snapshot node, descending from the root, whose
    /// key lies inside the node's interval — the root of every snapshot key in that interval. A
    /// child's anchor is found from its parent's by the same descent, usually one step (the
    /// parent's source's child), and an outside child is usually its anchor itself. Only keys the
    /// transaction deleted lie between, and those are searched on both sides within the interval.
    /// </remarks>
    private static Node? Resolve(IntentionImage image, DatabaseState snapshot)
    {
        var top = new Place(snapshot.Root, null, null);
        Node? root;
        var search = new Stack<Place>();
        if (image.RootIndex < 0)
        {
            root = image.RootVersion.IsSome ? ResolveOutside(image.RootVersion, null, null, top, search, snapshot, "the root") : null;
            return root;
        }

        root = image.Nodes[image.RootIndex];
        var work = new Stack<Work>();
        work.Push(new Work(image.RootIndex, null, null, top));
        while (work.Count > 0)
        {
            var (i, low, high, anchor) = work.Pop();
            var n = image.Nodes[i];
            if (image.IsCopied(i))
            {
                n.Source = FindKey(anchor.Node, n.Key)
                    ?? throw new IntentionFormatException($"{Label}, node {i}: copied from key {Keys.Format(n.Key)}, which {snapshot} does not hold");
                if (ReferenceEquals(n.Payload, NodeCodec.OmittedPayload))
                {
                    n.CopyPayloadOf(n.Source);
                }
            }

            var leftAnchor = Descend(anchor, low, n.Key);
            if (image.LeftIndex(i) >= 0)
            {
                work.Push(new Work(image.LeftIndex(i), low, n.Key, leftAnchor));
            }
            else if (image.LeftVersion(i).IsSome)
            {
                n.Left = ResolveOutside(image.LeftVersion(i), low, n.Key, leftAnchor, search, snapshot, $"node {i}'s left child");
            }

            var rightAnchor = Descend(anchor, n.Key, high);
            if (image.RightIndex(i) >= 0)
            {
                work.Push(new Work(image.RightIndex(i), n.Key, high, rightAnchor));
            }
            else if (image.RightVersion(i).IsSome)
            {
                n.Right = ResolveOutside(image.RightVersion(i), n.Key, high, rightAnchor, search, snapshot, $"node {i}'s right child");
            }
        }

        // Post-order: children's heights are checked before their parents'.
        for (var i = 0; i < image.Nodes.Count; i++)
        {
            var n = image.Nodes[i];
            int hl = Node.HeightOf(n.Left), hr = Node.HeightOf(n.Right);
            if (n.Height != Math.Max(hl, hr) + 1 || Math.Abs(hl - hr) > 1)
            {
                throw new IntentionFormatException($"{Label}, node {i}: height {n.Height} over children of heights {hl} and {hr}");
            }
        }

        return root;
    }

    private static bool Within(byte[] key, byte[]? low, byte[]? high) =>
        (low is null || Keys.Compare(key, low) > 0) && (high is null || Keys.Compare(key, high) < 0);

    /// <summary>From <paramref name="from"/>, the first node whose key lies in (low, high), with its bounds; a null node when there is none.</summary>
    private static Place Descend(Place from, byte[]? low, byte[]? high)
    {
        var (x, xl, xh) = from;
        while (x is not null && !Within(x.Key, low, high))
        {
            if (low is not null && Keys.Compare(x.Key, low) <= 0)
            {
                xl = x.Key;
                x = x.Right;
            }
            else
            {
                xh = x.Key;
                x = x.Left;
            }
        }

        return new Place(x, xl, xh);
    }

    private static Node? FindKey(Node? x, byte[] key)
    {
        while (x is not null)
        {
            var c = Keys.Compare(key, x.Key);
            if (c == 0)
            {
                return x;
            }

            x = c < 0 ? x.Left : x.Right;
        }

        return null;
    }

    /// <summary>
    /// The snapshot node with version <paramref name="vn"/> below <paramref name="anchor"/> whose
    /// key lies in (low, high) and whose whole subtree does too.
    /// </summary>
    private static Node ResolveOutside(NodeVersion vn, byte[]? low, byte[]? high, Place anchor, Stack<Place> search, DatabaseState snapshot, string what)
    {
        search.Clear();
        if (anchor.Node is not null)
        {
            search.Push(anchor);
        }

        while (search.Count > 0)
        {
            var (x, xl, xh) = search.Pop();
            if (x is null)
            {
                continue;
            }

            if (low is not null && Keys.Compare(x.Key, low) <= 0)
            {
                search.Push(new Place(x.Right, x.Key, xh));
                continue;
            }

            if (high is not null && Keys.Compare(x.Key, high) >= 0)
            {
                search.Push(new Place(x.Left, xl, x.Key));
                continue;
            }

            if (x.Vn == vn)
            {
                if (!Inside(x, xl, xh, low, high))
                {
                    throw new IntentionFormatException($"{Label}: {what} {vn} in {snapshot} has keys outside {Interval(low, high)}");
                }

                return x;
            }

            // A key the transaction deleted: the target lies on one side of it.
            search.Push(new Place(x.Right, x.Key, xh));
            search.Push(new Place(x.Left, xl, x.Key));
        }

        throw new IntentionFormatException($"{Label}: {what} {vn} does not resolve in {snapshot} between keys {Interval(low, high)}");
    }

    /// <summary>True when every key under <paramref name="x"/> (bounded by xl, xh in the snapshot) lies in (low, high).</summary>
    private static bool Inside(Node x, byte[]? xl, byte[]? xh, byte[]? low, byte[]? high)
    {
        if (low is not null && !(xl is not null && Keys.Compare(xl, low) >= 0))
        {
            var min = x;
            while (min.Left is not null)
            {
                min = min.Left;
            }

            if (Keys.Compare(min.Key, low) <= 0)
            {
                return false;
            }
        }

        if (high is not null && !(xh is not null && Keys.Compare(xh, high) <= 0))
        {
            var max = x;
            while (max.Right is not null)
            {
                max = max.Right;
            }

            if (Keys.Compare(max.Key, high) >= 0)
            {
                return false;
            }
        }

        return true;
    }

    private static string Interval(byte[]? low, byte[]? high) =>
        $"({(low is null ? "-inf" : Keys.Format(low))}, {(high is null ? "+inf" : Keys.Format(high))})";
}
