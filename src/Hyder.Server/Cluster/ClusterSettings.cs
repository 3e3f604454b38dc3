using System.Buffers.Binary;
using Hyder.Tree.Pipeline;

namespace Hyder.Server.Cluster;

/// <summary>
/// What every server of a cluster must agree on, because it changes what meld computes (DESIGN §6):
/// the pipeline's t, d and group meld, the intention block size, and how far behind the log a
/// transaction's snapshot may lie. The first record of the log states them; a server whose own
/// settings differ refuses to start.
/// </summary>
public sealed record ClusterSettings
{
    /// <summary>t: premeld threads (0: premeld off).</summary>
    public int PremeldThreads { get; init; }

    /// <summary>d: the premeld distance.</summary>
    public int Distance { get; init; }

    /// <summary>Group meld on.</summary>
    public bool GroupMeld { get; init; }

    /// <summary>Intention block size, bytes (at most the log's block size).</summary>
    public int BlockSize { get; init; } = 8192;

    /// <summary>
    /// W: an intention whose snapshot is more than W ordinals behind it aborts on every server
    /// (AbortCause.SnapshotTooOld); each server keeps the last W states to decode
    /// intentions against.
    /// </summary>
    public int StateWindow { get; init; } = 1 << 14;

    /// <summary>The pipeline options these settings mean.</summary>
    public PipelineOptions Pipeline => new(PremeldThreads, Distance, GroupMeld);

    private const byte Version = 1;

    /// <summary>Checks the settings; throws <see cref="ArgumentException"/> naming the bad one.</summary>
    public void Validate()
    {
        Pipeline.Validate();
        ArgumentOutOfRangeException.ThrowIfLessThan(BlockSize, 256, nameof(BlockSize));
        ArgumentOutOfRangeException.ThrowIfLessThan(StateWindow, 16, nameof(StateWindow));
    }

    /// <summary>The settings as the control record's payload.</summary>
    public byte[] Encode()
    {
        var b = new byte[1 + 4 + 4 + 1 + 4 + 4];
        b[0] = Version;
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(1), PremeldThreads);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(5), Distance);
        b[9] = GroupMeld ? (byte)1 : (byte)0;
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(10), BlockSize);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(14), StateWindow);
        return b;
    }

    /// <summary>Reads settings written by <see cref="Encode"/>; throws <see cref="FormatException"/> for anything else.</summary>
    public static ClusterSettings Decode(ReadOnlySpan<byte> b)
    {
        if (b.Length != 18 || b[0] != Version || b[9] > 1)
        {
            throw new FormatException($"cluster settings record of {b.Length} bytes, version {(b.Length > 0 ? b[0] : -1)}: not a settings record this server understands");
        }

        var s = new ClusterSettings
        {
            PremeldThreads = BinaryPrimitives.ReadInt32LittleEndian(b[1..]),
            Distance = BinaryPrimitives.ReadInt32LittleEndian(b[5..]),
            GroupMeld = b[9] == 1,
            BlockSize = BinaryPrimitives.ReadInt32LittleEndian(b[10..]),
            StateWindow = BinaryPrimitives.ReadInt32LittleEndian(b[14..]),
        };
        try
        {
            s.Validate();
        }
        catch (ArgumentException e)
        {
            throw new FormatException($"cluster settings record holds invalid settings: {e.Message}", e);
        }

        return s;
    }

    /// <inheritdoc/>
    public override string ToString() => $"{Pipeline}, block {BlockSize} B, state window {StateWindow}";
}

/// <summary>Why a server refused to start.</summary>
public sealed class ServerStartException(string message, Exception? inner = null) : Exception(message, inner);
