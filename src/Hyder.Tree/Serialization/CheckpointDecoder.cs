using Hyder.Tree.Memory;

namespace Hyder.Tree.Serialization;

/// <summary>
/// Loads a checkpoint: every node of the state from its records, in post-order, linked with an
/// explicit stack; a persistent node's key and payload from its intention in the log (each
/// intention decoded once). Faults in the bytes throw <see cref="IntentionFormatException"/>.
/// </summary>
/// <remarks>
/// <para>The loader checks, as it links: children before parents and each record the child of
/// exactly one parent (by construction of the stack), keys strictly in order, exact AVL heights,
/// every version at most once, a persistent record's key length against the node its intention
/// holds, and at the end a CRC-32C over every key and payload taken from the log, so a log that
/// does not hold what the writer saw is rejected rather than loaded.</para>
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
        if (finalBlock.Length > 4 && finalBlock[4] == BlockFormat.CheckpointVersion)
        {
            return CheckpointReader.ReadFinal(finalBlock).StateSequence;
        }

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
        var fr = BlockAssembly.OpenFinal(finalBlock, BlockKind.Checkpoint, Label, out var nonce, out var positions, out var version);
        if (version != BlockFormat.CheckpointByReferenceVersion)
        {
            fr.Fail($"format version {version}: this loader reads format {BlockFormat.CheckpointByReferenceVersion} (format {BlockFormat.CheckpointVersion}: CheckpointReader)");
        }

        fr.Varint("state sequence", long.MaxValue);
        var count = fr.Int("node count", int.MaxValue);
        var stream = BlockAssembly.Assemble(parts, BlockKind.CheckpointPart, nonce, positions, fr.Rest(), Label, version);

        var r = new ByteReader(stream, Label);
        var table = NodeCodec.ReadPositionTable(ref r);
        metadata = r.Bytes("metadata");
        if (r.Count("node count", CheckpointCodec.MinRecordBytes) != count)
        {
            r.Fail("the node count differs from the final block's");
        }

        var lease = new NodePoolLease(pool);
        var images = new Images(source, pool);
        try
        {
            return Link(ref r, count, table, lease, images);
        }
        catch
        {
            lease.ReturnAll();
            throw;
        }
        finally
        {
            // The state shares the images' key and payload arrays, not their nodes.
            images.ReturnAll();
        }
    }

    private static Node? Link(ref ByteReader r, int count, long[] table, NodePoolLease lease, Images images)
    {
        var nodes = new Node[count];
        var minOf = new int[count];
        var maxOf = new int[count];
        var stack = new int[count];
        var depth = 0;
        var ephemeral = new HashSet<NodeVersion>();
        uint digest = 0;
        r.ItemKind = "node";
        for (var i = 0; i < count; i++)
        {
            r.Item = i;
            var flags = r.Byte("flags");
            if ((flags & ~((byte)NodeCodec.StoredFlags | CheckpointCodec.PayloadRefBit)) != 0)
            {
                r.Fail($"flags {flags:X2} set a reserved bit");
            }

            var payloadByRef = (flags & CheckpointCodec.PayloadRefBit) != 0;
            flags &= unchecked((byte)~CheckpointCodec.PayloadRefBit);

            var shape = r.Byte("shape");
            var vnKind = (byte)(shape & 3);
            if (vnKind < NodeCodec.RefPersistent)
            {
                r.Fail($"version kind {vnKind} (a state node is persistent or ephemeral)");
            }

            NodeCodec.CheckScvKind(ref r, shape);
            var vn = NodeCodec.ReadVersion(ref r, vnKind, table, "version");
            byte[] key, payload;
            if (vnKind == NodeCodec.RefEphemeral)
            {
                if (!ephemeral.Add(vn))
                {
                    r.Fail($"version {vn} is written twice");
                }

                key = r.Bytes("key");
                if (key.Length == 0)
                {
                    r.Fail("empty key");
                }
            }
            else
            {
                var keyLength = r.Int("key length", int.MaxValue);
                var logged = images.Take(ref r, vn);
                if (logged.Key.Length != keyLength)
                {
                    r.Fail($"node {vn} in the log has a {logged.Key.Length}-byte key, the checkpoint says {keyLength}");
                }

                key = logged.Key;
                digest = CheckpointCodec.Digest(digest, key, []);
            }

            if (payloadByRef)
            {
                var writer = NodeCodec.ReadVersion(ref r, NodeCodec.RefPersistent, table, "payload version");
                payload = images.Payload(ref r, writer);
                digest = CheckpointCodec.Digest(digest, [], payload);
            }
            else
            {
                payload = r.Bytes("payload");
            }

            var n = lease.Rent();
            n.Key = key;
            n.Payload = payload;
            n.Vn = vn;
            n.Owner = 0;
            n.Flags = (NodeFlags)flags;
            NodeCodec.ReadMetadata(ref r, shape, table, n);
            nodes[i] = n;
            minOf[i] = maxOf[i] = i;
            CheckpointCodec.LinkChildren(ref r, n, i, shape, nodes, minOf, maxOf, stack, ref depth);

            stack[depth++] = i;
        }

        r.ItemKind = null;
        if (depth > 1)
        {
            r.Fail($"{depth - 1} node(s) are not reachable from the root (node {stack[depth - 2]} has no parent)");
        }

        if (r.U32("log digest") != digest)
        {
            r.Fail("the keys and payloads the log holds for its persistent nodes are not the ones the checkpoint was written with");
        }

        r.ExpectEnd();
        return count == 0 ? null : nodes[count - 1];
    }

    /// <summary>The intentions a load reads, each decoded once, and which of their nodes the state took.</summary>
    private sealed class Images(IPersistentNodeSource source, NodePool pool)
    {
        private readonly Dictionary<long, (IntentionImage Image, bool[] Used)> _images = [];

        /// <summary>Node <paramref name="vn"/> as its intention wrote it (its key and payload are what a state keeps).</summary>
        public Node Take(ref ByteReader r, NodeVersion vn)
        {
            var position = vn.Position;
            var entry = Load(position);
            var i = vn.Index;
            if (i >= entry.Image.Nodes.Count)
            {
                r.Fail($"node {vn} is beyond the {entry.Image.Nodes.Count} nodes of the intention at position {position}");
            }

            if (entry.Used[i])
            {
                r.Fail($"version {vn} is written twice");
            }

            entry.Used[i] = true;
            return entry.Image.Nodes[i];
        }

        /// <summary>The payload node <paramref name="vn"/> wrote (any number of state nodes may share it).</summary>
        public byte[] Payload(ref ByteReader r, NodeVersion vn)
        {
            var entry = Load(vn.Position);
            var i = vn.Index;
            if (i >= entry.Image.Nodes.Count)
            {
                r.Fail($"payload version {vn} is beyond the {entry.Image.Nodes.Count} nodes of the intention at position {vn.Position}");
            }

            var payload = entry.Image.Nodes[i].Payload;
            if (ReferenceEquals(payload, NodeCodec.OmittedPayload))
            {
                r.Fail($"payload version {vn} did not write its payload into the log (an unaltered copy)");
            }

            if (entry.Image.Nodes[i].HasOperations)
            {
                // Meld applies an operation list into a new ephemeral node, so no state names one.
                r.Fail($"payload version {vn} wrote an operation list, not a value");
            }

            return payload;
        }

        private (IntentionImage Image, bool[] Used) Load(long position)
        {
            if (!_images.TryGetValue(position, out var entry))
            {
                var (final, parts) = source.ReadIntention(position);
                try
                {
                    var image = IntentionDecoder.DecodeImage(final.Span, parts, pool);
                    entry = (image, new bool[image.Nodes.Count]);
                }
                catch (IntentionFormatException e)
                {
                    throw new IntentionFormatException($"{Label}: the intention at position {position} is malformed: {e.Message}", e);
                }

                _images.Add(position, entry);
            }

            return entry;
        }

        public void ReturnAll()
        {
            foreach (var (image, _) in _images.Values)
            {
                foreach (var n in image.Nodes)
                {
                    pool.Return(n);
                }
            }

            _images.Clear();
        }
    }
}
