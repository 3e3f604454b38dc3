using System.Buffers.Binary;

namespace Hyder.Tree.Serialization;

/// <summary>Reads the chunk layer: the final block's common fields and the parts' data, checked against each other.</summary>
internal static class BlockAssembly
{
    /// <summary>
    /// Checks the final block and reads its common fields (nonce, part positions); the reader it
    /// returns stands at the kind-specific fields.
    /// </summary>
    public static ByteReader OpenFinal(ReadOnlySpan<byte> final, BlockKind kind, string label, out long nonce, out long[] partPositions) =>
        OpenFinal(final, kind, label, out nonce, out partPositions, out _);

    /// <summary>As above, also giving the final block's format version (the parts must have it too).</summary>
    public static ByteReader OpenFinal(ReadOnlySpan<byte> final, BlockKind kind, string label, out long nonce, out long[] partPositions, out byte version)
    {
        var finalLabel = FinalLabel(label);
        var header = BlockFormat.Parse(final, finalLabel);
        if (header.Kind != kind)
        {
            throw new IntentionFormatException($"{label}, final block: kind {header.Kind}, expected {kind}");
        }

        version = header.Version;

        var r = new ByteReader(final[BlockFormat.HeaderSize..header.Length], finalLabel);
        nonce = (long)r.U64("nonce");
        var count = r.Count("part count", 1);
        partPositions = count == 0 ? [] : new long[count];
        long previous = 0;
        for (var i = 0; i < count; i++)
        {
            var p = (long)r.Varint("part position", (ulong)NodeVersion.MaxPosition);
            if (p <= previous)
            {
                r.Fail($"part position {i} ({p}) is not above the previous one ({previous})");
            }

            partPositions[i] = p;
            previous = p;
        }

        return r;
    }

    /// <summary>
    /// The final block's name in error messages. Every server reads every final block, so the
    /// known kinds' names are constants, not a string built per block.
    /// </summary>
    private static string FinalLabel(string label) => label switch
    {
        "intention" => "intention, final block",
        "checkpoint" => "checkpoint, final block",
        _ => $"{label}, final block",
    };

    /// <summary>
    /// The logical stream: every part's data in order, then <paramref name="tail"/> (the final
    /// block's). With <paramref name="version"/>, every part must carry that format version.
    /// </summary>
    public static byte[] Assemble(IReadOnlyList<ReadOnlyMemory<byte>> parts, BlockKind partKind, long nonce, long[] partPositions, ReadOnlySpan<byte> tail, string label, byte? version = null)
    {
        ArgumentNullException.ThrowIfNull(parts);
        if (parts.Count != partPositions.Length)
        {
            throw new IntentionFormatException($"{label}: {parts.Count} part blocks given, the final block names {partPositions.Length}");
        }

        var offsets = new int[parts.Count];
        long total = tail.Length;
        for (var i = 0; i < parts.Count; i++)
        {
            var block = parts[i].Span;
            var what = $"{label}, block {i} (part at position {partPositions[i]})";
            var header = BlockFormat.Parse(block, what);
            if (header.Kind != partKind)
            {
                throw new IntentionFormatException($"{what}: kind {header.Kind}, expected {partKind}");
            }

            if (version is { } v && header.Version != v)
            {
                throw new IntentionFormatException($"{what}: format version {header.Version}, the final block's is {v}");
            }

            var r = new ByteReader(block[BlockFormat.HeaderSize..header.Length], what);
            var partNonce = (long)r.U64("nonce");
            if (partNonce != nonce)
            {
                r.Fail($"nonce {partNonce:X16} is not the final block's {nonce:X16} (a block of another encoding)");
            }

            var index = r.Varint("chunk index", int.MaxValue);
            if (index != (ulong)i)
            {
                r.Fail($"chunk index {index} where {i} belongs (parts reordered or duplicated)");
            }

            offsets[i] = BlockFormat.HeaderSize + r.Position;
            total += header.Length - offsets[i];
        }

        if (total > Array.MaxLength)
        {
            throw new IntentionFormatException($"{label}: {total} bytes of data are more than one stream can hold");
        }

        var stream = new byte[total];
        var at = 0;
        for (var i = 0; i < parts.Count; i++)
        {
            var block = parts[i].Span;
            var length = (int)BinaryPrimitives.ReadUInt32LittleEndian(block[6..]);
            var data = block[offsets[i]..length];
            data.CopyTo(stream.AsSpan(at));
            at += data.Length;
        }

        tail.CopyTo(stream.AsSpan(at));
        return stream;
    }
}
