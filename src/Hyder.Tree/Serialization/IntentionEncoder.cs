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

        var inside = OwnerRange.Of(intention);
        var scratch = t_scratch ??= new Scratch();
        var nodes = scratch.Nodes;
        nodes.Clear();

        // Every persistent version the stream will hold, collected in the order it is written
        // below (a node's SCV, its SSV, its outside children; the deletes; the root): versions are
        // written as indexes into the sorted table of their distinct positions.
        var table = scratch.Positions;
        table.Clear();
        Collect(intention, intention.Root, inside, nodes, table);
        if (nodes.Count > NodeVersion.MaxIndex + 1)
        {
            ThrowHelper.ThrowArgument(nameof(intention), $"{nodes.Count} nodes are more than an intention may hold");
        }

        foreach (var d in intention.Deletes)
        {
            table.Add(d.Scv);
        }

        var rootOutside = intention.Root is { } r && !inside.Contains(r);
        if (rootOutside)
        {
            table.Add(intention.Root!.Vn);
        }

        var w = scratch.Stream;
        w.Reset();
        NodeCodec.WritePositionTable(w, table.Seal());
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

        if (!table.AllWritten)
        {
            ThrowHelper.ThrowInvalidOperation($"the encoder collected {table.References} references to log positions but wrote fewer");
        }

        var fields = scratch.Fields;
        fields.Reset();
        fields.Varint((ulong)intention.SnapshotSequence);
        fields.Byte((byte)intention.Isolation);
        fields.Varint((ulong)nodes.Count);
        var count = nodes.Count;
        intention.KeepSealOrder(System.Runtime.InteropServices.CollectionsMarshal.AsSpan(nodes));
        nodes.Clear();
        return EncodedIntention.Cut(w.Written, BlockKind.IntentionPart, BlockKind.Intention, fields.Written, blockSize, count, "an intention");
    }

    /// <summary>
    /// Appends the inside nodes below <paramref name="n"/> in post-order to <paramref name="order"/>
    /// and collects, node by node, the persistent versions <see cref="NodeCodec.WriteNode"/> will
    /// write for it: its SCV, its SSV unless the same, and its outside children's versions.
    /// </summary>
    private static void Collect(Intention intention, Node? n, OwnerRange inside, List<Node> order, WriteOrderPositions positions)
    {
        if (n is null || !inside.Contains(n))
        {
            return;
        }

        Collect(intention, n.Left, inside, order, positions);
        Collect(intention, n.Right, inside, order, positions);
        order.Add(n);
        positions.Add(n.Scv);
        if (n.Ssv != n.Scv)
        {
            positions.Add(n.Ssv);
        }

        CollectOutside(intention, n, n.Left, inside, positions);
        CollectOutside(intention, n, n.Right, inside, positions);
    }

    /// <summary>Adds the version of <paramref name="child"/>, a pointer from inside node <paramref name="n"/> to outside, to <paramref name="positions"/>.</summary>
    private static void CollectOutside(Intention intention, Node n, Node? child, OwnerRange inside, WriteOrderPositions positions)
    {
        if (child is null || inside.Contains(child))
        {
            return;
        }

        if (!child.Vn.IsSome)
        {
            ThrowHelper.ThrowArgument(nameof(intention), $"node {Keys.Format(n.Key)} points outside to an unversioned node {Keys.Format(child.Key)}");
        }

        positions.Add(child.Vn);
    }

    private sealed class Scratch
    {
        public readonly List<Node> Nodes = [];
        public readonly WriteOrderPositions Positions = new();
        public readonly ByteWriter Stream = new(4096);
        public readonly ByteWriter Fields = new(16);
    }

    /// <summary>The inside nodes in post-order (left, right, node): the order <see cref="Intention.Seal"/> numbers them in.</summary>
    internal static List<Node> PostOrder(Node? root, OwnerRange inside)
    {
        var order = new List<Node>();
        PostOrder(root, inside, order);
        return order;
    }

    /// <summary>
    /// Appends the inside nodes below <paramref name="n"/> in post-order to <paramref name="order"/>.
    /// Recursive: a balanced tree's depth is small (an AVL tree of 2^40 keys is under 58 deep).
    /// </summary>
    private static void PostOrder(Node? n, OwnerRange inside, List<Node> order)
    {
        if (n is null || !inside.Contains(n))
        {
            return;
        }

        PostOrder(n.Left, inside, order);
        PostOrder(n.Right, inside, order);
        order.Add(n);
    }
}
