namespace Hyder.Tree.Serialization;

/// <summary>
/// An intention (or checkpoint) cut into blocks, in two phases: append <see cref="Parts"/> in
/// order, then build the final block with <see cref="Finish"/> from the positions the parts got,
/// and append it last (its position is the intention's).
/// </summary>
public sealed class EncodedIntention
{
    /// <summary>Bytes a part position takes at most in the final block (a varint of a 40-bit position).</summary>
    internal const int MaxPositionBytes = 6;

    [ThreadStatic]
    private static ByteWriter? t_finish;

    private readonly BlockKind _finalKind;
    /// <summary>Bytes of the kind-specific fields at the front of <see cref="_tail"/>'s buffer.</summary>
    private readonly int _fieldsLength;
    private readonly int _tailLength;
    private readonly byte? _version;
    private byte[]? _tail;

    internal EncodedIntention(BlockKind finalKind, long nonce, IReadOnlyList<ReadOnlyMemory<byte>> parts, int fieldsLength, byte[] tail, int tailLength, int blockSize, int streamLength, int nodeCount, byte? version = null)
    {
        _version = version;
        _finalKind = finalKind;
        Nonce = nonce;
        Parts = parts;
        _fieldsLength = fieldsLength;
        _tail = tail;
        _tailLength = tailLength;
        BlockSize = blockSize;
        StreamLength = streamLength;
        NodeCount = nodeCount;
    }

    /// <summary>The non-final chunk blocks: append these first, in order.</summary>
    public IReadOnlyList<ReadOnlyMemory<byte>> Parts { get; }

    /// <summary>The random 64-bit value every block of this encoding carries.</summary>
    public long Nonce { get; }

    /// <summary>The block size the encoding was cut for.</summary>
    public int BlockSize { get; }

    /// <summary>Length of the logical byte stream (all chunks' data, headers excluded).</summary>
    public int StreamLength { get; }

    /// <summary>Nodes written (inside nodes of an intention; every node of a checkpoint's state).</summary>
    public int NodeCount { get; }

    /// <summary>
    /// Gives the pooled buffer that holds the final block's data back, once the final block is
    /// built and will not be built again; <see cref="Finish"/> throws after it. Not calling it
    /// only leaves the buffer to the GC.
    /// </summary>
    public void Release()
    {
        if (Interlocked.Exchange(ref _tail, null) is { } tail)
        {
            System.Buffers.ArrayPool<byte>.Shared.Return(tail);
        }
    }

    /// <summary>
    /// The final block, once the parts are in the log: <paramref name="partPositions"/> holds their
    /// log positions in order (strictly increasing, 1..<see cref="NodeVersion.MaxPosition"/>).
    /// </summary>
    public ReadOnlyMemory<byte> Finish(ReadOnlySpan<long> partPositions)
    {
        var block = WriteFinal(partPositions).Written.ToArray();
        BlockFormat.Seal(block, _finalKind, _version);
        return block;
    }

    /// <summary>
    /// <see cref="Finish"/> into an array rented from <see cref="System.Buffers.ArrayPool{T}.Shared"/>
    /// (<paramref name="rented"/>; the block is its first bytes), for a caller that gives it back
    /// once nothing reads the block any more — after the log append that copies it has completed.
    /// </summary>
    public ReadOnlyMemory<byte> FinishPooled(ReadOnlySpan<long> partPositions, out byte[] rented)
    {
        var written = WriteFinal(partPositions).Written;
        rented = System.Buffers.ArrayPool<byte>.Shared.Rent(written.Length);
        var block = rented.AsSpan(0, written.Length);
        written.CopyTo(block);
        BlockFormat.Seal(block, _finalKind, _version);
        return rented.AsMemory(0, written.Length);
    }

    /// <summary>The final block's bytes, header left blank, in this thread's scratch writer.</summary>
    private ByteWriter WriteFinal(ReadOnlySpan<long> partPositions)
    {
        if (partPositions.Length != Parts.Count)
        {
            ThrowHelper.ThrowArgument(nameof(partPositions), $"{partPositions.Length} part positions given for {Parts.Count} parts");
        }

        var tail = _tail ?? throw new ObjectDisposedException(nameof(EncodedIntention), "the encoding was released");
        var w = t_finish ??= new ByteWriter(BlockFormat.HeaderSize + 8 + (partPositions.Length * MaxPositionBytes) + _fieldsLength + _tailLength + 8);
        w.Reset();
        w.Zeros(BlockFormat.HeaderSize);
        w.U64((ulong)Nonce);
        w.Varint((ulong)partPositions.Length);
        long previous = 0;
        foreach (var p in partPositions)
        {
            if (p <= previous || p > NodeVersion.MaxPosition)
            {
                ThrowHelper.ThrowArgument(nameof(partPositions), $"part position {p} is not above {previous} and at most {NodeVersion.MaxPosition}");
            }

            w.Varint((ulong)p);
            previous = p;
        }

        w.Raw(tail.AsSpan(0, _fieldsLength + _tailLength));
        return w;
    }

    /// <summary>
    /// Cuts <paramref name="stream"/> into parts and a final tail: parts take full chunks from the
    /// front, the final block the rest, with room kept for the part positions and <paramref name="fields"/>.
    /// </summary>
    internal static EncodedIntention Cut(ReadOnlySpan<byte> stream, BlockKind partKind, BlockKind finalKind, ReadOnlySpan<byte> fields, int blockSize, int nodeCount, string what, byte? version = null)
    {
        BlockFormat.CheckBlockSize(blockSize);
        var nonce = Random.Shared.NextInt64(long.MinValue, long.MaxValue);
        const int Fixed = BlockFormat.HeaderSize + 8;

        // The smallest part count whose parts and final block hold the stream.
        var parts = 0;
        long capacity = 0;
        while (true)
        {
            var finalRoom = blockSize - Fixed - ByteWriter.VarintSize((ulong)parts) - ((long)parts * MaxPositionBytes) - fields.Length;
            if (finalRoom < 0)
            {
                ThrowHelper.ThrowArgument(nameof(blockSize), $"{what} of {stream.Length} bytes does not fit {blockSize}-byte blocks");
            }

            if (capacity + finalRoom >= stream.Length)
            {
                break;
            }

            capacity += blockSize - Fixed - ByteWriter.VarintSize((ulong)parts);
            parts++;
        }

        ReadOnlyMemory<byte>[] blocks = parts == 0 ? [] : new ReadOnlyMemory<byte>[parts];
        var at = 0;
        for (var i = 0; i < parts; i++)
        {
            var room = blockSize - Fixed - ByteWriter.VarintSize((ulong)i);
            var take = Math.Min(room, stream.Length - at);
            var w = new ByteWriter(Fixed + 5 + take);
            w.Zeros(BlockFormat.HeaderSize);
            w.U64((ulong)nonce);
            w.Varint((ulong)i);
            w.Raw(stream.Slice(at, take));
            at += take;
            var block = w.Written.ToArray();
            BlockFormat.Seal(block, partKind, version);
            blocks[i] = block;
        }

        // The fields and the tail wait for Finish in one pooled buffer (Release gives it back), in
        // the order the final block holds them: the final block is the one copy that outlives the encoding.
        var rest = stream[at..];
        var tail = System.Buffers.ArrayPool<byte>.Shared.Rent(Math.Max(1, fields.Length + rest.Length));
        fields.CopyTo(tail);
        rest.CopyTo(tail.AsSpan(fields.Length));
        return new EncodedIntention(finalKind, nonce, blocks, fields.Length, tail, rest.Length, blockSize, stream.Length, nodeCount, version);
    }
}
