namespace Hyder.Tree.Serialization;

/// <summary>
/// Serializes a committed state so a restarted server rebuilds it node for node (DESIGN §8;
/// docs/intention-format.md, "Checkpoints"): every ephemeral node reachable from the root is
/// written whole with its own version; a persistent node only by its version, since its bytes
/// are in the log.
/// </summary>
public static class CheckpointEncoder
{
    /// <summary>Encodes <paramref name="state"/> (pinned by the caller) with the server's opaque <paramref name="metadata"/>.</summary>
    public static EncodedIntention Encode(DatabaseState state, ReadOnlySpan<byte> metadata, int blockSize = BlockFormat.DefaultBlockSize)
    {
        ArgumentNullException.ThrowIfNull(state);
        var ephemeral = new List<Node>();
        var positions = new HashSet<long>();
        var stack = new Stack<Node>();
        if (state.Root is { } root)
        {
            stack.Push(root);
            NodeCodec.Collect(root.Vn, positions);
        }

        // Pre-order over the whole state: ephemeral nodes may hang below persistent ones.
        while (stack.Count > 0)
        {
            var n = stack.Pop();
            if (!n.Vn.IsSome)
            {
                ThrowHelper.ThrowArgument(nameof(state), $"node {Keys.Format(n.Key)} of {state} has no version");
            }

            if (n.Vn.IsEphemeral)
            {
                ephemeral.Add(n);
                NodeCodec.Collect(n.Ssv, positions);
                NodeCodec.Collect(n.Scv, positions);
                NodeCodec.Collect(n.Left?.Vn ?? default, positions);
                NodeCodec.Collect(n.Right?.Vn ?? default, positions);
            }

            if (n.Right is { } right)
            {
                stack.Push(right);
            }

            if (n.Left is { } left)
            {
                stack.Push(left);
            }
        }

        var table = positions.ToArray();
        Array.Sort(table);
        var w = new ByteWriter(64 + metadata.Length + (ephemeral.Count * 48));
        NodeCodec.WritePositionTable(w, table);
        w.Bytes(metadata);
        w.Varint((ulong)ephemeral.Count);
        foreach (var n in ephemeral)
        {
            NodeCodec.WriteVersion(w, n.Vn, table);
            NodeCodec.WriteNode(w, n, copied: false, static _ => false, table);
        }

        var rootVn = state.Root?.Vn ?? NodeVersion.None;
        w.Byte(NodeCodec.VersionKind(rootVn));
        NodeCodec.WriteVersion(w, rootVn, table);

        var fields = new ByteWriter(16);
        fields.Varint((ulong)state.Sequence);
        fields.Varint((ulong)ephemeral.Count);
        return EncodedIntention.Cut(w.Written, BlockKind.CheckpointPart, BlockKind.Checkpoint, fields.Written.ToArray(), blockSize, ephemeral.Count, "a checkpoint");
    }
}
