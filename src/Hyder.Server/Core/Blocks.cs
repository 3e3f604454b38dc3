using System.Runtime.CompilerServices;
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

    /// <summary>
    /// Loads the checkpoint whose final block is <paramref name="final"/>: format 4 from its own
    /// parts alone, read from the log between its first and last part one block at a time without
    /// blocking the caller (<see cref="CheckpointReader.LoadAsync"/>); format 3 with its persistent
    /// nodes' keys and payloads from the intentions in the log, through the blocking
    /// <see cref="LogNodeSource"/> (on the thread pool unless <paramref name="inline"/>).
    /// </summary>
    public static async Task<(Node? Root, byte[] Metadata)> LoadCheckpointAsync(byte[] final, LogNodeSource source, bool inline, CancellationToken cancellationToken)
    {
        if (BlockHeader.TryParse(final, out var header, out _) && header.Version == BlockFormat.CheckpointVersion)
        {
            var f = CheckpointReader.ReadFinal(final);
            return await CheckpointReader.LoadAsync(final, source.ReadRangeAsync(f.FirstPart, f.LastPart, cancellationToken), new Tree.Memory.NodePool(Tree.Memory.NodePool.DefaultCapacity), cancellationToken).ConfigureAwait(false);
        }

        return inline
            ? LoadFormat3(final, source)
            : await Task.Run(() => LoadFormat3(final, source), cancellationToken).ConfigureAwait(false);
    }

    private static (Node? Root, byte[] Metadata) LoadFormat3(byte[] final, LogNodeSource source)
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

    /// <summary>The data blocks at positions <paramref name="first"/> to <paramref name="last"/>, in order, read one at a time (fills and holes left out; each valid until the next is asked for).</summary>
    public async IAsyncEnumerable<ReadOnlyMemory<byte>> ReadRangeAsync(long first, long last, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        var buffer = new byte[log.BlockSize];
        for (var p = first; p <= last; p++)
        {
            var read = await log.ReadAsync(p, buffer, cancellationToken).ConfigureAwait(false);
            if (read.Kind == LogEntryKind.Data)
            {
                yield return buffer.AsMemory(0, read.Length);
            }
        }
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
