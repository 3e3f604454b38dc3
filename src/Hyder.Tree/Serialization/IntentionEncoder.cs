namespace Hyder.Tree.Serialization;

/// <summary>
/// Serializes an intention into blocks (docs/intention-format.md): inside nodes in post-order,
/// so the root lands in the final block; outside pointers as versions, persistent ones through a
/// table of the distinct foreign log positions.
/// </summary>
public static class IntentionEncoder
{
    /// <summary>
    /// The encoder's working sets, one per thread and reused: an executor encodes an intention per
    /// transaction, and only what outlives the call (the blocks) is allocated (DESIGN §7).
    /// </summary>
    [ThreadStatic]
    private static Scratch? t_scratch;

    /// <summary>Encodes <paramref name="intention"/> (as the executor completed it) for blocks of <paramref name="blockSize"/> bytes.</summary>
    /// <exception cref="ArgumentException">A group or premelded intention, a pointer to an unversioned node, or an intention too large for the block size.</exception>
    public static EncodedIntention Encode(Intention intention, int blockSize = BlockFormat.DefaultBlockSize)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (intention.IsGroup || intention.IsPremelded)
        {
            ThrowHelper.ThrowArgument(nameof(intention), "only a transaction's own intention goes to the log, not a premeld or group result");
        }

        var token = intention.ExecutorToken;
        Func<Node, bool> inside = intention.IsSealed ? intention.Contains : n => n.Owner == token;
        var scratch = t_scratch ??= new Scratch();
        var nodes = scratch.Nodes;
        nodes.Clear();
        scratch.Stack.Clear();
        PostOrder(intention.Root, inside, nodes, scratch.Stack);
        if (nodes.Count > NodeVersion.MaxIndex + 1)
        {
            ThrowHelper.ThrowArgument(nameof(intention), $"{nodes.Count} nodes are more than an intention may hold");
        }

        var positions = scratch.Positions;
        positions.Clear();
        foreach (var n in nodes)
        {
            NodeCodec.Collect(n.Ssv, positions);
            NodeCodec.Collect(n.Scv, positions);
            foreach (var child in (ReadOnlySpan<Node?>)[n.Left, n.Right])
            {
                if (child is not null && !inside(child))
                {
                    if (!child.Vn.IsSome)
                    {
                        ThrowHelper.ThrowArgument(nameof(intention), $"node {Keys.Format(n.Key)} points outside to an unversioned node {Keys.Format(child.Key)}");
                    }

                    NodeCodec.Collect(child.Vn, positions);
                }
            }
        }

        foreach (var d in intention.Deletes)
        {
            NodeCodec.Collect(d.Scv, positions);
        }

        var rootOutside = intention.Root is { } r && !inside(r);
        if (rootOutside)
        {
            NodeCodec.Collect(intention.Root!.Vn, positions);
        }

        var table = positions.ToArray();
        Array.Sort(table);

        var w = scratch.Stream;
        w.Reset();
        NodeCodec.WritePositionTable(w, table);
        foreach (var n in nodes)
        {
            NodeCodec.WriteNode(w, n, n.Source is not null, inside, table);
        }

        w.Varint((ulong)intention.Deletes.Length);
        foreach (var d in intention.Deletes)
        {
            w.Bytes(d.Key);
            w.Byte((byte)(NodeCodec.VersionKind(d.Scv) | (d.Blind ? 4 : 0)));
            NodeCodec.WriteVersion(w, d.Scv, table);
        }

        NodeCodec.WriteRanges(w, intention.RootRanges);
        if (intention.Root is null)
        {
            w.Byte(NodeCodec.RefNull);
        }
        else if (!rootOutside)
        {
            w.Byte(NodeCodec.RefInside);
        }
        else
        {
            w.Byte(NodeCodec.VersionKind(intention.Root.Vn));
            NodeCodec.WriteVersion(w, intention.Root.Vn, table);
        }

        var fields = scratch.Fields;
        fields.Reset();
        fields.Varint((ulong)intention.SnapshotSequence);
        fields.Byte((byte)intention.Isolation);
        fields.Varint((ulong)nodes.Count);
        var count = nodes.Count;
        nodes.Clear();
        return EncodedIntention.Cut(w.Written, BlockKind.IntentionPart, BlockKind.Intention, fields.Written.ToArray(), blockSize, count, "an intention");
    }

    private sealed class Scratch
    {
        public readonly List<Node> Nodes = [];
        public readonly Stack<(Node Node, bool Expanded)> Stack = new();
        public readonly HashSet<long> Positions = [];
        public readonly ByteWriter Stream = new(4096);
        public readonly ByteWriter Fields = new(16);
    }

    /// <summary>The inside nodes in post-order (left, right, node): the order <see cref="Intention.Seal"/> numbers them in.</summary>
    internal static List<Node> PostOrder(Node? root, Func<Node, bool> inside)
    {
        var order = new List<Node>();
        PostOrder(root, inside, order, new Stack<(Node Node, bool Expanded)>());
        return order;
    }

    /// <summary>Appends the inside nodes in post-order to <paramref name="order"/>, with <paramref name="stack"/> (empty) as working space.</summary>
    private static void PostOrder(Node? root, Func<Node, bool> inside, List<Node> order, Stack<(Node Node, bool Expanded)> stack)
    {
        if (root is null || !inside(root))
        {
            return;
        }

        stack.Push((root, false));
        while (stack.Count > 0)
        {
            var (n, expanded) = stack.Pop();
            if (expanded)
            {
                order.Add(n);
                continue;
            }

            stack.Push((n, true));
            if (n.Right is { } right && inside(right))
            {
                stack.Push((right, false));
            }

            if (n.Left is { } left && inside(left))
            {
                stack.Push((left, false));
            }
        }
    }
}
