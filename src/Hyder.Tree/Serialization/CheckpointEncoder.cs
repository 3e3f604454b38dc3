namespace Hyder.Tree.Serialization;

/// <summary>
/// Serializes a committed state in checkpoint format 3, by reference to the log (the format
/// servers write is 4, self-contained: <see cref="CheckpointWriter"/>), so a restarted server rebuilds it node for node (DESIGN §8;
/// docs/intention-format.md, "Checkpoints"): every node reachable from the root, in post-order,
/// with its version and all its meld metadata; only a persistent node's key and payload are left
/// to the log, where its intention holds them.
/// </summary>
/// <remarks>
/// A persistent node's metadata cannot be taken from the log: premeld and group meld rewrite
/// intention nodes in place before final meld grafts them (children re-based into a newer state,
/// SSVs cleared, ranges moved to the root, flags and heights changed). Its key and payload are
/// never rewritten — meld makes a new ephemeral node for any other content.
/// </remarks>
public static class CheckpointEncoder
{
    /// <summary>Encodes <paramref name="state"/> (pinned by the caller) with the server's opaque <paramref name="metadata"/>.</summary>
    public static EncodedIntention Encode(DatabaseState state, ReadOnlySpan<byte> metadata, int blockSize = BlockFormat.DefaultBlockSize)
    {
        ArgumentNullException.ThrowIfNull(state);

        // Post-order over the whole state with an explicit stack (a state may be large).
        var nodes = IntentionEncoder.PostOrder(state.Root, OwnerRange.All);
        var table = new PositionTable();
        foreach (var n in nodes)
        {
            if (!n.Vn.IsSome)
            {
                ThrowHelper.ThrowArgument(nameof(state), $"node {Keys.Format(n.Key)} of {state} has no version");
            }

            table.Add(n.Vn);
            table.Add(n.Ssv);
            table.Add(n.Scv);
            table.Add(n.Ncv);
        }

        var w = new ByteWriter(64 + metadata.Length + (nodes.Count * 24));
        NodeCodec.WritePositionTable(w, table.Seal());
        w.Bytes(metadata);
        w.Varint((ulong)nodes.Count);
        uint digest = 0;
        foreach (var n in nodes)
        {
            var vnKind = NodeCodec.VersionKind(n.Vn);

            // The payload is the one its content version wrote: in the log when that version is
            // persistent (an intention stores the payload of every node it altered).
            var payloadByRef = n.Ncv.IsPersistent;
            w.Byte((byte)((byte)(n.Flags & NodeCodec.StoredFlags) | (payloadByRef ? CheckpointCodec.PayloadRefBit : 0)));
            w.Byte((byte)(vnKind | (n.Left is null ? 0 : CheckpointCodec.LeftBit) | (n.Right is null ? 0 : CheckpointCodec.RightBit) | NodeCodec.SourceKinds(n)));
            NodeCodec.WriteVersion(w, n.Vn, table);
            if (vnKind == NodeCodec.RefEphemeral)
            {
                w.Bytes(n.Key);
            }
            else
            {
                w.Varint((ulong)n.Key.Length);
                digest = CheckpointCodec.Digest(digest, n.Key, []);
            }

            if (payloadByRef)
            {
                NodeCodec.WriteVersion(w, n.Ncv, table);
                digest = CheckpointCodec.Digest(digest, [], n.Payload);
            }
            else
            {
                w.Bytes(n.Payload);
            }

            NodeCodec.WriteMetadata(w, n, table);
        }

        w.U32(digest);
        var fields = new ByteWriter(16);
        fields.Varint((ulong)state.Sequence);
        fields.Varint((ulong)nodes.Count);
        return EncodedIntention.Cut(w.Written, BlockKind.CheckpointPart, BlockKind.Checkpoint, fields.Written, blockSize, nodes.Count, "a checkpoint", BlockFormat.CheckpointByReferenceVersion);
    }
}

/// <summary>What the checkpoint encoder and decoder share beyond <see cref="NodeCodec"/>.</summary>
internal static class CheckpointCodec
{
    /// <summary>Shape-byte bits: the record has a left (right) child, the top of the decoder's stack.</summary>
    public const byte LeftBit = 1 << 2, RightBit = 1 << 3;

    /// <summary>Flags-byte bit: the payload is the one the persistent version that follows wrote (its NCV), read from the log.</summary>
    public const byte PayloadRefBit = 1 << 6;

    /// <summary>Smallest record: flags, shape, a 2-byte version, a key length, height (SCV may be none).</summary>
    public const int MinRecordBytes = 6;

    /// <summary>
    /// Continues the CRC-32C over the key and payload a persistent record takes from the log
    /// (each preceded by its length as a u32), so a log that does not hold what the writer saw
    /// fails the load.
    /// </summary>
    public static uint Digest(uint crc, ReadOnlySpan<byte> key, ReadOnlySpan<byte> payload)
    {
        Span<byte> length = stackalloc byte[4];
        System.Buffers.Binary.BinaryPrimitives.WriteInt32LittleEndian(length, key.Length);
        crc = Crc32C.Append(Crc32C.Append(crc, length), key);
        System.Buffers.Binary.BinaryPrimitives.WriteInt32LittleEndian(length, payload.Length);
        return Crc32C.Append(Crc32C.Append(crc, length), payload);
    }

    /// <summary>
    /// Links record <paramref name="i"/>'s children (records are in post-order: the nodes still
    /// without a parent are on <paramref name="stack"/>, the right child on top), and checks what
    /// a hostile stream could break: a key between its subtrees' keys, AVL heights. Both checkpoint
    /// formats share it (<see cref="CheckpointDecoder"/>, <see cref="CheckpointReader"/>).
    /// </summary>
    public static void LinkChildren(ref ByteReader r, Node n, int i, byte shape, ReadOnlySpan<Node> nodes, Span<int> minOf, Span<int> maxOf, ReadOnlySpan<int> stack, ref int depth)
    {
        if ((shape & RightBit) != 0)
        {
            var c = Pop(ref r, stack, ref depth, "right");
            if (Keys.Compare(nodes[minOf[c]].Key, n.Key) <= 0)
            {
                r.Fail("key not below its right subtree");
            }

            n.Right = nodes[c];
            maxOf[i] = maxOf[c];
        }

        if ((shape & LeftBit) != 0)
        {
            var c = Pop(ref r, stack, ref depth, "left");
            if (Keys.Compare(nodes[maxOf[c]].Key, n.Key) >= 0)
            {
                r.Fail("key not above its left subtree");
            }

            n.Left = nodes[c];
            minOf[i] = minOf[c];
        }

        int hl = Node.HeightOf(n.Left), hr = Node.HeightOf(n.Right);
        if (n.Height != Math.Max(hl, hr) + 1 || Math.Abs(hl - hr) > 1)
        {
            r.Fail($"height {n.Height} over children of heights {hl} and {hr}");
        }
    }

    private static int Pop(ref ByteReader r, ReadOnlySpan<int> stack, ref int depth, string side)
    {
        if (depth == 0)
        {
            r.Fail($"it has a {side} child but no earlier node is left without a parent");
        }

        return stack[--depth];
    }
}
