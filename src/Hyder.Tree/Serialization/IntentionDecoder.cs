using Hyder.Tree.Memory;

namespace Hyder.Tree.Serialization;

/// <summary>
/// Rebuilds an intention from its blocks (docs/intention-format.md). Every fault in the bytes, and
/// every outside reference the snapshot does not hold, throws <see cref="IntentionFormatException"/>
/// with a sentence that depends only on the bytes and the snapshot — the same on every server.
/// </summary>
/// <remarks>
/// The result is unsealed, like <see cref="Transaction.Complete"/>'s: inside nodes are owned by a
/// fresh executor token, so <see cref="Intention.Seal"/> numbers them exactly as on the server
/// that ran the transaction. The engine's semantic rules (metadata, the delete list) are checked
/// by <see cref="IntentionValidator"/> once the intention is sealed, as for any intention; the
/// decoder checks the format and the structure (order, heights, references).
/// </remarks>
public static partial class IntentionDecoder
{
    private const string Label = "intention";

    /// <summary>Reads and checks an intention's final block header fields without decoding nodes.</summary>
    public static IntentionHeader ReadHeader(ReadOnlySpan<byte> finalBlock)
    {
        OpenHeader(finalBlock, out var header);
        return header;
    }

    /// <summary>
    /// Decodes the intention against <paramref name="snapshot"/>, the local state whose sequence is
    /// the header's snapshot sequence (pinned by the caller). Outside references resolve to the
    /// snapshot's own nodes; the intention takes a pin of its own on the snapshot.
    /// </summary>
    /// <param name="finalBlock">The intention's final block.</param>
    /// <param name="parts">Its earlier blocks, in the order <see cref="IntentionHeader.PartPositions"/> names them.</param>
    /// <param name="snapshot">The local state S(s).</param>
    /// <param name="pool">Where the inside nodes come from.</param>
    /// <param name="values">The database's value pool, which the decoded values are copied into (null: ordinary arrays).</param>
    public static Intention Decode(ReadOnlySpan<byte> finalBlock, IReadOnlyList<ReadOnlyMemory<byte>> parts, DatabaseState snapshot, NodePool pool, ValuePool? values = null)
    {
        ArgumentNullException.ThrowIfNull(snapshot);
        ArgumentNullException.ThrowIfNull(pool);
        var lease = new NodePoolLease(pool, values);
        var image = Parse(finalBlock, parts, lease);
        if (image.Header.SnapshotSequence != snapshot.Sequence)
        {
            lease.ReturnAll();
            throw new IntentionFormatException($"{Label}: it ran on state #{image.Header.SnapshotSequence} but {snapshot} was given to resolve it");
        }

        Node? root;
        try
        {
            root = Resolve(image, snapshot);
        }
        catch (IntentionFormatException)
        {
            lease.ReturnAll();
            throw;
        }

        var token = Transaction.NextToken();
        foreach (var n in image.Nodes)
        {
            n.Owner = token;
        }

        snapshot.AddPin();
        var intention = new Intention(root, snapshot, image.Header.Isolation, image.Deletes, image.RootRanges, 0)
        {
            ExecutorToken = token,
            HasOperations = image.Nodes.Any(static n => n.HasOperations),
        };

        // The stream lists the nodes in post-order, every one reachable from the root (ParseStream
        // builds the tree from a stack of finished subtrees and refuses a leftover): the seal and
        // final meld's recycling walk this list, not the tree.
        intention.KeepSealOrder(image.NodeSpan);
        return intention;
    }

    /// <summary>Decodes the intention without a snapshot: inside nodes linked, outside references as versions.</summary>
    public static IntentionImage DecodeImage(ReadOnlySpan<byte> finalBlock, IReadOnlyList<ReadOnlyMemory<byte>> parts, NodePool pool)
    {
        ArgumentNullException.ThrowIfNull(pool);
        return Parse(finalBlock, parts, new NodePoolLease(pool));
    }

    private static ByteReader OpenHeader(ReadOnlySpan<byte> finalBlock, out IntentionHeader header) => OpenHeader(finalBlock, out header, out _);

    private static ByteReader OpenHeader(ReadOnlySpan<byte> finalBlock, out IntentionHeader header, out byte version)
    {
        var r = BlockAssembly.OpenFinal(finalBlock, BlockKind.Intention, Label, out var nonce, out var positions, out version);
        var sequence = (long)r.Varint("snapshot sequence", long.MaxValue);
        var isolation = r.Byte("isolation level");
        if (isolation > (byte)IsolationLevel.ReadCommitted)
        {
            r.Fail($"unknown isolation level {isolation}");
        }

        var count = r.Int("node count", NodeVersion.MaxIndex + 1);
        header = new IntentionHeader(nonce, positions, sequence, (IsolationLevel)isolation, count);
        return r;
    }

    private static IntentionImage Parse(ReadOnlySpan<byte> finalBlock, IReadOnlyList<ReadOnlyMemory<byte>> parts, NodePoolLease lease)
    {
        var fr = OpenHeader(finalBlock, out var header, out var version);
        var stream = BlockAssembly.Assemble(parts, BlockKind.IntentionPart, header.Nonce, (long[])header.PartPositions, fr.Rest(), Label, version);
        try
        {
            return ParseStream(stream, header, lease, allowOperations: version >= BlockFormat.OperationsVersion);
        }
        catch (IntentionFormatException)
        {
            lease.ReturnAll();
            throw;
        }
    }

    private static IntentionImage ParseStream(byte[] stream, IntentionHeader header, NodePoolLease lease, bool allowOperations)
    {
        var r = new ByteReader(stream, Label);
        var table = NodeCodec.ReadPositionTable(ref r);
        var count = header.NodeCount;
        if (count > r.Remaining / NodeCodec.MinNodeBytes)
        {
            r.Fail($"the header's node count {count} is more than the {r.Remaining} bytes left can hold");
        }

        var nodes = new Node[count];
        var leftIndex = new int[count];
        var rightIndex = new int[count];
        var leftVersion = new NodeVersion[count];
        var rightVersion = new NodeVersion[count];
        var copied = new bool[count];
        var minOf = new int[count];
        var maxOf = new int[count];
        var stack = new int[count];
        var depth = 0;
        r.ItemKind = "node";
        for (var i = 0; i < count; i++)
        {
            r.Item = i;
            var n = NodeCodec.ReadNode(ref r, lease, table, allowCopied: true, out var refs, allowOperations);
            nodes[i] = n;
            copied[i] = refs.Copied;
            leftVersion[i] = refs.Left;
            rightVersion[i] = refs.Right;
            rightIndex[i] = refs.RightKind == NodeCodec.RefInside ? Pop(ref r, stack, ref depth, "right") : -1;
            leftIndex[i] = refs.LeftKind == NodeCodec.RefInside ? Pop(ref r, stack, ref depth, "left") : -1;
            minOf[i] = maxOf[i] = i;
            if (leftIndex[i] >= 0)
            {
                var l = leftIndex[i];
                if (Keys.Compare(nodes[maxOf[l]].Key, n.Key) >= 0)
                {
                    r.Fail("key not above its left subtree");
                }

                n.Left = nodes[l];
                minOf[i] = minOf[l];
            }

            if (rightIndex[i] >= 0)
            {
                var rt = rightIndex[i];
                if (Keys.Compare(nodes[minOf[rt]].Key, n.Key) <= 0)
                {
                    r.Fail("key not below its right subtree");
                }

                n.Right = nodes[rt];
                maxOf[i] = maxOf[rt];
            }

            stack[depth++] = i;
        }

        r.ItemKind = null;
        var deletes = ReadDeletes(ref r, table);
        var rootRanges = NodeCodec.ReadRanges(ref r, atLeastOne: false);
        var rootKind = r.Byte("root reference");
        var rootIndex = -1;
        var rootVersion = NodeVersion.None;
        switch (rootKind)
        {
            case NodeCodec.RefNull:
                break;
            case NodeCodec.RefInside:
                if (depth == 0)
                {
                    r.Fail("the root is an inside node but there are no nodes");
                }

                rootIndex = stack[--depth];
                break;
            case NodeCodec.RefPersistent or NodeCodec.RefEphemeral:
                rootVersion = NodeCodec.ReadVersion(ref r, rootKind, table, "root");
                break;
            default:
                r.Fail($"unknown root reference kind {rootKind}");
                break;
        }

        if (depth != 0)
        {
            r.Fail($"{depth} inside node(s) are not reachable from the root (node {stack[depth - 1]} has no parent)");
        }

        r.ExpectEnd();
        return new IntentionImage(header, nodes, leftIndex, rightIndex, leftVersion, rightVersion, copied, deletes, rootRanges, rootIndex, rootVersion);
    }

    private static int Pop(ref ByteReader r, int[] stack, ref int depth, string side)
    {
        if (depth == 0)
        {
            r.Fail($"its {side} child is an inside node but no earlier node is left without a parent");
        }

        return stack[--depth];
    }

    private static DeleteEntry[] ReadDeletes(ref ByteReader r, long[] table)
    {
        // A delete is at least a key length, a kind byte and a 2-byte version.
        var n = r.Count("delete count", 4);
        var deletes = n == 0 ? [] : new DeleteEntry[n];
        r.ItemKind = "delete";
        for (var i = 0; i < n; i++)
        {
            r.Item = i;
            var key = r.Bytes("key");
            var kind = r.Byte("kind");
            var versionKind = (byte)(kind & 3);
            if ((kind & ~7) != 0 || versionKind < NodeCodec.RefPersistent)
            {
                r.Fail($"kind byte {kind:X2} is invalid (a delete names a persistent or ephemeral version)");
            }

            deletes[i] = new DeleteEntry(key, NodeCodec.ReadVersion(ref r, versionKind, table, "SCV"), (kind & 4) != 0);
        }

        r.ItemKind = null;
        return deletes;
    }
}
