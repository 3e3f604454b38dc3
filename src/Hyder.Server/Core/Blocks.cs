using Hyder.Log;
using Hyder.Server.Cluster;
using Hyder.Tree;
using Hyder.Tree.Serialization;

namespace Hyder.Server.Core;

/// <summary>The server's use of the block format (Hyder.Tree.Serialization), in one place.</summary>
internal static class Blocks
{
    /// <summary>A control block of <paramref name="kind"/>.</summary>
    public static byte[] Control(ControlKind kind, ReadOnlySpan<byte> body) =>
        BlockFormat.WriteControl(ControlRecord.Encode(kind, body));

    /// <summary>Checks a block's header (magic, version, length, CRC) and names its kind.</summary>
    public static bool TryParse(ReadOnlySpan<byte> block, out BlockKind kind, out string? error)
    {
        if (BlockHeader.TryParse(block, out var header, out error))
        {
            kind = header.Kind;
            return true;
        }

        kind = default;
        return false;
    }

    /// <summary>The payload of a control block that <see cref="TryParse"/> accepted.</summary>
    public static ReadOnlySpan<byte> ControlPayload(ReadOnlySpan<byte> block) => BlockFormat.ReadControl(block);

    /// <summary>A checkpoint of <paramref name="state"/> with the server's metadata.</summary>
    public static EncodedIntention EncodeCheckpoint(DatabaseState state, byte[] metadata, int blockSize) =>
        CheckpointEncoder.Encode(state, metadata, blockSize);

    /// <summary>Loads the checkpoint whose final block is <paramref name="final"/>, reading its parts and persistent nodes from the log.</summary>
    public static (Node? Root, byte[] Metadata) LoadCheckpoint(byte[] final, LogNodeSource source)
    {
        BlockAssembly.OpenFinal(final, BlockKind.Checkpoint, "checkpoint", out _, out var positions);
        var parts = source.ReadParts(positions);
        var root = CheckpointDecoder.Load(final, parts, source, new Tree.Memory.NodePool(Tree.Memory.NodePool.DefaultCapacity), out var metadata);
        return (root, metadata);
    }
}

/// <summary>Persistent nodes for a checkpoint load: intentions read from the log by position.</summary>
internal sealed class LogNodeSource(ISharedLog log) : IPersistentNodeSource
{
    public (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position)
    {
        var final = Read(position);
        var header = IntentionDecoder.ReadHeader(final);
        return (final, ReadParts(header.PartPositions));
    }

    public IReadOnlyList<ReadOnlyMemory<byte>> ReadParts(IReadOnlyList<long> positions)
    {
        var parts = new ReadOnlyMemory<byte>[positions.Count];
        for (var i = 0; i < parts.Length; i++)
        {
            parts[i] = Read(positions[i]);
        }

        return parts;
    }

    private byte[] Read(long position)
    {
        var buffer = new byte[log.BlockSize];
        var read = log.ReadAsync(position, buffer).AsTask().GetAwaiter().GetResult();
        if (read.Kind != LogEntryKind.Data)
        {
            throw new IntentionFormatException($"log position @{position} holds no block ({read.Kind})");
        }

        return buffer.AsSpan(0, read.Length).ToArray();
    }
}
