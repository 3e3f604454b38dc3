using Hyder.Tree.Memory;

namespace Hyder.Tree.Serialization;

/// <summary>
/// Loads a checkpoint: the ephemeral nodes from its blocks, the persistent ones from their
/// intentions in the log (each intention decoded once), linked top-down from the root with an
/// explicit stack. Faults throw <see cref="IntentionFormatException"/>.
/// </summary>
/// <remarks>
/// <para>A persistent node in a state is its intention's node as written, except that a child that
/// was a read-only copy (SubtreeIsOnlyReadDependent) is replaced by the node it was copied from —
/// meld publishes read-only copies that way — whose version is the copy's SSV.</para>
/// <para>Every loaded node has <see cref="Node.Owner"/> 0. On a server that melded them, persistent
/// nodes keep their intention's ordinal; nothing reads that once the intention is melded (meld
/// compares owners only with the ordinals of the intention it is melding, which are larger), and
/// the state hash does not include it.</para>
/// </remarks>
public static class CheckpointDecoder
{
    private const string Label = "checkpoint";

    /// <summary>The sequence of the state a checkpoint holds (checks the final block).</summary>
    public static long ReadSequence(ReadOnlySpan<byte> finalBlock)
    {
        var r = BlockAssembly.OpenFinal(finalBlock, BlockKind.Checkpoint, Label, out _, out _);
        return (long)r.Varint("state sequence", long.MaxValue);
    }

    /// <summary>Loads the checkpoint's state and returns its root (null for an empty state).</summary>
    /// <param name="finalBlock">The checkpoint's final block.</param>
    /// <param name="parts">Its earlier blocks, in order.</param>
    /// <param name="source">The log, for the intentions whose nodes the state uses.</param>
    /// <param name="pool">Where nodes come from.</param>
    /// <param name="metadata">The server's opaque bytes stored with the checkpoint.</param>
    public static Node? Load(ReadOnlySpan<byte> finalBlock, IReadOnlyList<ReadOnlyMemory<byte>> parts, IPersistentNodeSource source, NodePool pool, out byte[] metadata)
    {
        ArgumentNullException.ThrowIfNull(source);
        ArgumentNullException.ThrowIfNull(pool);
        var fr = BlockAssembly.OpenFinal(finalBlock, BlockKind.Checkpoint, Label, out var nonce, out var positions);
        fr.Varint("state sequence", long.MaxValue);
        var count = fr.Int("node count", int.MaxValue);
        var stream = BlockAssembly.Assemble(parts, BlockKind.CheckpointPart, nonce, positions, fr.Rest(), Label);

        var r = new ByteReader(stream, Label);
        var table = NodeCodec.ReadPositionTable(ref r);
        metadata = r.Bytes("metadata");
        if (r.Count("node count", NodeCodec.MinNodeBytes + 2) != count)
        {
            r.Fail("the node count differs from the final block's");
        }

        var records = new Dictionary<NodeVersion, (Node Node, NodeVersion Left, NodeVersion Right)>(count);
        var lease = new NodePoolLease(pool);
        r.ItemKind = "node";
        for (var i = 0; i < count; i++)
        {
            r.Item = i;
            var vn = NodeCodec.ReadVersion(ref r, NodeCodec.RefEphemeral, table, "version");
            var n = NodeCodec.ReadNode(ref r, lease, table, allowCopied: false, out var refs);
            if (refs.LeftKind == NodeCodec.RefInside || refs.RightKind == NodeCodec.RefInside)
            {
                r.Fail("a checkpoint names every child by its version");
            }

            n.Vn = vn;
            if (!records.TryAdd(vn, (n, refs.Left, refs.Right)))
            {
                r.Fail($"version {vn} is written twice");
            }
        }

        r.ItemKind = null;
        var rootKind = r.Byte("root reference");
        if (rootKind is NodeCodec.RefInside or > NodeCodec.RefEphemeral)
        {
            r.Fail($"unknown root reference kind {rootKind}");
        }

        var rootVn = NodeCodec.ReadVersion(ref r, rootKind, table, "root");
        r.ExpectEnd();
        return Link(rootVn, records, source, pool);
    }

    private static Node? Link(NodeVersion rootVn, Dictionary<NodeVersion, (Node Node, NodeVersion Left, NodeVersion Right)> records, IPersistentNodeSource source, NodePool pool)
    {
        var images = new Dictionary<long, (IntentionImage Image, bool[] Used)>();
        var work = new Stack<(Node? Parent, bool Left, NodeVersion Vn)>();
        Node? root = null;
        if (rootVn.IsSome)
        {
            work.Push((null, false, rootVn));
        }

        while (work.Count > 0)
        {
            var (parent, isLeft, vn) = work.Pop();
            Node node;
            NodeVersion left, right;
            if (vn.IsEphemeral)
            {
                if (!records.Remove(vn, out var record))
                {
                    throw new IntentionFormatException($"{Label}: ephemeral node {vn} is referenced but not written, or referenced twice");
                }

                (node, left, right) = record;
            }
            else
            {
                node = Persistent(vn, images, source, pool, out left, out right);
            }

            node.Owner = 0;
            node.Left = null;
            node.Right = null;
            if (parent is null)
            {
                root = node;
            }
            else if (isLeft)
            {
                parent.Left = node;
            }
            else
            {
                parent.Right = node;
            }

            if (right.IsSome)
            {
                work.Push((node, false, right));
            }

            if (left.IsSome)
            {
                work.Push((node, true, left));
            }
        }

        if (records.Count != 0)
        {
            throw new IntentionFormatException($"{Label}: {records.Count} ephemeral node(s) are not reachable from the root");
        }

        Check(root);
        return root;
    }

    /// <summary>Node <paramref name="vn"/> as its state holds it, from its intention's image.</summary>
    private static Node Persistent(NodeVersion vn, Dictionary<long, (IntentionImage Image, bool[] Used)> images, IPersistentNodeSource source, NodePool pool, out NodeVersion left, out NodeVersion right)
    {
        var position = vn.Position;
        if (!images.TryGetValue(position, out var entry))
        {
            var (final, parts) = source.ReadIntention(position);
            IntentionImage image;
            try
            {
                image = IntentionDecoder.DecodeImage(final.Span, parts, pool);
            }
            catch (IntentionFormatException e)
            {
                throw new IntentionFormatException($"{Label}: the intention at position {position} is malformed: {e.Message}", e);
            }

            entry = (image, new bool[image.Nodes.Count]);
            images.Add(position, entry);
        }

        var i = vn.Index;
        if (i >= entry.Image.Nodes.Count)
        {
            throw new IntentionFormatException($"{Label}: node {vn} is beyond the {entry.Image.Nodes.Count} nodes of the intention at position {position}");
        }

        if (entry.Used[i])
        {
            throw new IntentionFormatException($"{Label}: node {vn} is referenced twice");
        }

        entry.Used[i] = true;
        left = Child(entry.Image, position, entry.Image.LeftIndex(i), entry.Image.LeftVersion(i));
        right = Child(entry.Image, position, entry.Image.RightIndex(i), entry.Image.RightVersion(i));
        var node = entry.Image.Nodes[i];
        node.Vn = vn;
        node.Source = null;
        return node;
    }

    /// <summary>The version of the child a state holds: a read-only copy stands for the node it was copied from.</summary>
    private static NodeVersion Child(IntentionImage image, long position, int index, NodeVersion outside)
    {
        if (index < 0)
        {
            return outside;
        }

        var c = image.Nodes[index];
        if (!c.SubtreeIsOnlyReadDependent)
        {
            return NodeVersion.Persistent(position, index);
        }

        if (!c.Ssv.IsSome)
        {
            throw new IntentionFormatException($"{Label}: read-only node {index} of the intention at position {position} names no source");
        }

        return c.Ssv;
    }

    /// <summary>Keys strictly in order and exact AVL heights, checked iteratively (a hostile tree may be deep).</summary>
    private static void Check(Node? root)
    {
        var stack = new Stack<Node>();
        byte[]? previous = null;
        var n = root;
        while (n is not null || stack.Count > 0)
        {
            while (n is not null)
            {
                stack.Push(n);
                n = n.Left;
            }

            n = stack.Pop();
            if (previous is not null && Keys.Compare(previous, n.Key) >= 0)
            {
                throw new IntentionFormatException($"{Label}: key {Keys.Format(n.Key)} is not above {Keys.Format(previous)}");
            }

            int hl = Node.HeightOf(n.Left), hr = Node.HeightOf(n.Right);
            if (n.Height != Math.Max(hl, hr) + 1 || Math.Abs(hl - hr) > 1)
            {
                throw new IntentionFormatException($"{Label}: node {n.Vn} has height {n.Height} over children of heights {hl} and {hr}");
            }

            previous = n.Key;
            n = n.Right;
        }
    }
}
