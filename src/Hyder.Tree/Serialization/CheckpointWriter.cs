namespace Hyder.Tree.Serialization;

/// <summary>
/// Writes a committed state as a self-contained checkpoint (format 4, docs/intention-format.md
/// §4): every node reachable from the root in post-order with its key, payload, version and meld
/// metadata, so a server can start from it with nothing below it in the log. Streaming: the part
/// blocks are cut as the tree is walked (<see cref="Parts"/>), so no buffer holds the whole state;
/// the final block (<see cref="Finish"/>) names the first and last part positions, not every one.
/// </summary>
/// <remarks>
/// The state must stay pinned until <see cref="Parts"/> has been enumerated: the writer reads its
/// nodes, which are immutable once committed, so it runs on any thread beside the meld pipeline.
/// </remarks>
public sealed class CheckpointWriter
{
    private readonly DatabaseState _state;
    private readonly byte[] _metadata;
    private readonly int _blockSize;
    private readonly PositionTable _table;
    private bool _started;
    private bool _done;

    /// <summary>Prepares a checkpoint of <paramref name="state"/> (pinned by the caller) with the server's opaque <paramref name="metadata"/>.</summary>
    public CheckpointWriter(DatabaseState state, ReadOnlySpan<byte> metadata, int blockSize = BlockFormat.DefaultBlockSize)
    {
        ArgumentNullException.ThrowIfNull(state);
        BlockFormat.CheckBlockSize(blockSize);
        _state = state;
        _metadata = metadata.ToArray();
        _blockSize = blockSize;
        Nonce = Random.Shared.NextInt64(long.MinValue, long.MaxValue);

        // First walk: the positions the versions name and the node count (no bytes kept per node).
        var positions = new PositionTable();
        var count = 0;
        foreach (var n in PostOrder(state.Root))
        {
            if (!n.Vn.IsSome)
            {
                ThrowHelper.ThrowArgument(nameof(state), $"node {Keys.Format(n.Key)} of {state} has no version");
            }

            positions.Add(n.Vn);
            positions.Add(n.Ssv);
            positions.Add(n.Scv);
            count++;
        }

        positions.Seal();
        _table = positions;
        NodeCount = count;
    }

    /// <summary>The random 64-bit value every block of this checkpoint carries.</summary>
    public long Nonce { get; }

    /// <summary>Nodes written: every node of the state.</summary>
    public int NodeCount { get; }

    /// <summary>Part blocks cut so far (all of them once <see cref="Parts"/> has been enumerated).</summary>
    public int PartCount { get; private set; }

    /// <summary>Bytes of the logical stream written so far (headers excluded).</summary>
    public long StreamLength { get; private set; }

    /// <summary>
    /// The part blocks, cut as the tree is walked: append each, in order, before taking the next.
    /// Enumerate once.
    /// </summary>
    public IEnumerable<byte[]> Parts()
    {
        if (_started)
        {
            ThrowHelper.ThrowInvalidOperation("a checkpoint's parts are enumerated once");
        }

        _started = true;
        return Cut();
    }

    private IEnumerable<byte[]> Cut()
    {
        var pending = new byte[_blockSize * 2];
        var length = 0;
        var w = new ByteWriter(256);

        // The header section, length-prefixed so a reader takes it whole.
        NodeCodec.WritePositionTable(w, _table.Sorted);
        w.Bytes(_metadata);
        w.Varint((ulong)NodeCount);
        var section = w.Written.ToArray();
        w.Clear();
        w.Bytes(section);
        Append(ref pending, ref length, w.Written);
        var record = new ByteWriter(256);
        foreach (var n in PostOrder(_state.Root))
        {
            while (length >= Room(PartCount))
            {
                yield return TakePart(pending, ref length);
            }

            record.Clear();
            var vnKind = NodeCodec.VersionKind(n.Vn);
            record.Byte((byte)(n.Flags & NodeCodec.StoredFlags));
            record.Byte((byte)(vnKind | (n.Left is null ? 0 : CheckpointCodec.LeftBit) | (n.Right is null ? 0 : CheckpointCodec.RightBit) | NodeCodec.SourceKinds(n)));
            NodeCodec.WriteVersion(record, n.Vn, _table);
            record.Bytes(n.Key);
            record.Bytes(n.Payload);
            NodeCodec.WriteMetadata(record, n, _table);
            w.Clear();
            w.Bytes(record.Written);
            Append(ref pending, ref length, w.Written);
        }

        while (length > 0)
        {
            yield return TakePart(pending, ref length);
        }

        _done = true;
    }

    /// <summary>Stream bytes a part of chunk index <paramref name="index"/> holds.</summary>
    private int Room(int index) => _blockSize - BlockFormat.HeaderSize - 8 - ByteWriter.VarintSize((ulong)index);

    private void Append(ref byte[] pending, ref int length, ReadOnlySpan<byte> bytes)
    {
        if (length + bytes.Length > pending.Length)
        {
            Array.Resize(ref pending, Math.Max(pending.Length * 2, length + bytes.Length));
        }

        bytes.CopyTo(pending.AsSpan(length));
        length += bytes.Length;
        StreamLength += bytes.Length;
    }

    private byte[] TakePart(byte[] pending, ref int length)
    {
        var index = PartCount;
        var take = Math.Min(Room(index), length);
        var w = new ByteWriter(BlockFormat.HeaderSize + 8 + 5 + take);
        w.Zeros(BlockFormat.HeaderSize);
        w.U64((ulong)Nonce);
        w.Varint((ulong)index);
        w.Raw(pending.AsSpan(0, take));
        var block = w.Written.ToArray();
        BlockFormat.Seal(block, BlockKind.CheckpointPart, BlockFormat.CheckpointVersion);
        pending.AsSpan(take, length - take).CopyTo(pending);
        length -= take;
        PartCount++;
        return block;
    }

    /// <summary>
    /// The final block, once every part is in the log: the positions of the first and last part
    /// (every part lies between them, in order) and <paramref name="needsFrom"/>, the lowest log
    /// position a server starting from this checkpoint reads (where its log reading resumes, or
    /// lower): the trim rule keeps everything from there (docs/server.md).
    /// </summary>
    public byte[] Finish(long firstPart, long lastPart, long needsFrom)
    {
        if (!_done)
        {
            ThrowHelper.ThrowInvalidOperation("the checkpoint's parts have not all been cut");
        }

        if (firstPart < 0 || lastPart < firstPart || lastPart - firstPart < PartCount - 1 || needsFrom < 0 || lastPart > NodeVersion.MaxPosition)
        {
            ThrowHelper.ThrowArgument(nameof(lastPart), $"parts at {firstPart}..{lastPart} cannot hold {PartCount} parts (needs from {needsFrom})");
        }

        var w = new ByteWriter(BlockFormat.HeaderSize + 64);
        w.Zeros(BlockFormat.HeaderSize);
        w.U64((ulong)Nonce);
        w.Varint((ulong)PartCount);
        w.Varint((ulong)firstPart);
        w.Varint((ulong)lastPart);
        w.Varint((ulong)needsFrom);
        w.Varint((ulong)_state.Sequence);
        w.Varint((ulong)NodeCount);
        var block = w.Written.ToArray();
        BlockFormat.Seal(block, BlockKind.Checkpoint, BlockFormat.CheckpointVersion);
        return block;
    }

    /// <summary>Every node reachable from <paramref name="root"/>, children before parents (an explicit stack: a state may be deep).</summary>
    internal static IEnumerable<Node> PostOrder(Node? root)
    {
        if (root is null)
        {
            yield break;
        }

        var stack = new Stack<(Node Node, bool Expanded)>();
        stack.Push((root, false));
        while (stack.Count > 0)
        {
            var (n, expanded) = stack.Pop();
            if (expanded)
            {
                yield return n;
                continue;
            }

            stack.Push((n, true));
            if (n.Right is { } right)
            {
                stack.Push((right, false));
            }

            if (n.Left is { } left)
            {
                stack.Push((left, false));
            }
        }
    }
}
