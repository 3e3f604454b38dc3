using System.Buffers.Binary;

namespace Hyder.Tree.Serialization;

/// <summary>What a block holds.</summary>
public enum BlockKind : byte
{
    /// <summary>A non-final chunk of an intention.</summary>
    IntentionPart = 1,

    /// <summary>The final block of an intention (its log position is the intention's).</summary>
    Intention = 2,

    /// <summary>A non-final chunk of a checkpoint.</summary>
    CheckpointPart = 3,

    /// <summary>The final block of a checkpoint.</summary>
    Checkpoint = 4,

    /// <summary>An opaque payload defined by the server (settings, filler, checkpoint marker).</summary>
    Control = 5,
}

/// <summary>
/// The fixed header every block starts with (docs/intention-format.md):
/// magic "HYDB", format version (per kind: <see cref="BlockFormat.VersionOf"/>), kind, total length (u32 LE) and the CRC-32C (u32 LE) of every
/// byte after the CRC field up to the total length, preceded from intention format 3 by the version
/// and kind bytes (<see cref="BlockFormat.Checksum"/>).
/// </summary>
/// <param name="Kind">The block's kind.</param>
/// <param name="Length">Total length of the block, header included.</param>
/// <param name="Crc">The stored CRC-32C.</param>
/// <param name="Version">The block's format version (one this build reads: <see cref="BlockFormat.Reads"/>).</param>
public readonly record struct BlockHeader(BlockKind Kind, int Length, uint Crc, byte Version)
{
    /// <summary>
    /// Parses and checks the header of <paramref name="block"/>: magic, version, kind, length (at
    /// least a header, at most the bytes given and <see cref="BlockFormat.MaxBlockSize"/>) and CRC.
    /// Bytes after <see cref="Length"/> (a padded log slot) are ignored.
    /// </summary>
    /// <returns>True when the block is sound; otherwise false and a sentence in <paramref name="error"/>.</returns>
    public static bool TryParse(ReadOnlySpan<byte> block, out BlockHeader header, out string? error)
    {
        header = default;
        if (block.Length < BlockFormat.HeaderSize)
        {
            error = $"{block.Length} bytes are shorter than a block header ({BlockFormat.HeaderSize} bytes)";
            return false;
        }

        if (!block[..4].SequenceEqual(BlockFormat.Magic))
        {
            error = $"bad magic {Convert.ToHexString(block[..4])} (expected {Convert.ToHexString(BlockFormat.Magic)})";
            return false;
        }

        var kind = (BlockKind)block[5];
        if (kind is < BlockKind.IntentionPart or > BlockKind.Control)
        {
            error = $"unknown block kind {block[5]}";
            return false;
        }

        if (!BlockFormat.Reads(kind, block[4]))
        {
            error = $"unsupported format version {block[4]} of a {kind} block (this build reads {BlockFormat.OldestVersionOf(kind)}..{BlockFormat.VersionOf(kind)})";
            return false;
        }

        var length = BinaryPrimitives.ReadUInt32LittleEndian(block[6..]);
        if (length < BlockFormat.HeaderSize || length > BlockFormat.MaxBlockSize || length > (uint)block.Length)
        {
            error = $"block length {length} is outside {BlockFormat.HeaderSize}..{Math.Min(BlockFormat.MaxBlockSize, block.Length)} (the bytes given)";
            return false;
        }

        var crc = BinaryPrimitives.ReadUInt32LittleEndian(block[10..]);
        var actual = BlockFormat.Checksum(block[..(int)length]);
        if (crc != actual)
        {
            error = $"CRC mismatch (stored {crc:X8}, computed {actual:X8})";
            return false;
        }

        header = new BlockHeader(kind, (int)length, crc, block[4]);
        error = null;
        return true;
    }
}

/// <summary>Constants of the block format and helpers for blocks with an opaque payload.</summary>
public static class BlockFormat
{
    /// <summary>
    /// Format version of intention and control blocks written by this build: 3 adds nodes with
    /// operation lists (docs/doppel.md). Versions 2 and 3 are read.
    /// </summary>
    public const byte Version = 3;

    /// <summary>The oldest intention and control block version this build still reads (2: no operation lists).</summary>
    public const byte OldestVersion = 2;

    /// <summary>The first intention format whose node records may carry operation lists.</summary>
    public const byte OperationsVersion = 3;

    /// <summary>
    /// Format version of checkpoint blocks: 4 is self-contained and streamed (every key and payload
    /// in the checkpoint, parts found by nonce between the first and last part positions the final
    /// block names: <see cref="CheckpointWriter"/>); 3 wrote a persistent node's key and payload by
    /// reference to its intention in the log (still read: <see cref="CheckpointDecoder"/>).
    /// </summary>
    public const byte CheckpointVersion = 4;

    /// <summary>The checkpoint format that takes persistent nodes' keys and payloads from the log (the oldest read).</summary>
    public const byte CheckpointByReferenceVersion = 3;

    /// <summary>The format version blocks of <paramref name="kind"/> are written with.</summary>
    public static byte VersionOf(BlockKind kind) =>
        kind is BlockKind.Checkpoint or BlockKind.CheckpointPart ? CheckpointVersion : Version;

    /// <summary>The oldest format version of <paramref name="kind"/> this build reads.</summary>
    public static byte OldestVersionOf(BlockKind kind) =>
        kind is BlockKind.Checkpoint or BlockKind.CheckpointPart ? CheckpointByReferenceVersion : OldestVersion;

    /// <summary>True when this build reads blocks of <paramref name="kind"/> at <paramref name="version"/>.</summary>
    public static bool Reads(BlockKind kind, byte version) => version >= OldestVersionOf(kind) && version <= VersionOf(kind);

    /// <summary>Size of the fixed header: magic 4, version 1, kind 1, length 4, CRC 4.</summary>
    public const int HeaderSize = 14;

    /// <summary>The default block size (DESIGN §4).</summary>
    public const int DefaultBlockSize = 8192;

    /// <summary>The smallest block size the encoders accept.</summary>
    public const int MinBlockSize = 128;

    /// <summary>The largest block a reader accepts (1 MiB): a bound on what a length field can claim.</summary>
    public const int MaxBlockSize = 1 << 20;

    /// <summary>The magic every block starts with: "HYDB".</summary>
    public static ReadOnlySpan<byte> Magic => "HYDB"u8;

    /// <summary>A control block around <paramref name="payload"/>.</summary>
    /// <param name="payload">The server's opaque bytes.</param>
    /// <param name="blockSize">The log's block size; the payload must fit after the header.</param>
    public static byte[] WriteControl(ReadOnlySpan<byte> payload, int blockSize = DefaultBlockSize)
    {
        CheckBlockSize(blockSize);
        if (payload.Length > blockSize - HeaderSize)
        {
            ThrowHelper.ThrowArgument(nameof(payload), $"a control payload of {payload.Length} bytes does not fit a {blockSize}-byte block");
        }

        var block = new byte[HeaderSize + payload.Length];
        payload.CopyTo(block.AsSpan(HeaderSize));
        Seal(block, BlockKind.Control);
        return block;
    }

    /// <summary>The payload of a control block; throws <see cref="IntentionFormatException"/> when the block is not a sound control block.</summary>
    public static ReadOnlySpan<byte> ReadControl(ReadOnlySpan<byte> block)
    {
        var header = Parse(block, "control block");
        if (header.Kind != BlockKind.Control)
        {
            throw new IntentionFormatException($"control block: the block is of kind {header.Kind}");
        }

        return block[HeaderSize..header.Length];
    }

    /// <summary>Writes the header of a block whose body is already in place (the whole span is the block).</summary>
    internal static void Seal(Span<byte> block, BlockKind kind, byte? version = null)
    {
        Magic.CopyTo(block);
        block[4] = version ?? VersionOf(kind);
        block[5] = (byte)kind;
        BinaryPrimitives.WriteUInt32LittleEndian(block[6..], (uint)block.Length);
        BinaryPrimitives.WriteUInt32LittleEndian(block[10..], Checksum(block));
    }

    /// <summary>
    /// The CRC-32C a block's header stores. From intention and control format 3 it covers the
    /// version and kind bytes too (then the body, bytes 14..L), so a flip of the version byte
    /// to an older format that would read the same body is caught; older formats and checkpoints
    /// cover the body only.
    /// </summary>
    internal static uint Checksum(ReadOnlySpan<byte> block)
    {
        var kind = (BlockKind)block[5];
        var crc = kind is BlockKind.Checkpoint or BlockKind.CheckpointPart || block[4] < OperationsVersion ? 0u : Crc32C.Compute(block[4..6]);
        return Crc32C.Append(crc, block[HeaderSize..]);
    }

    /// <summary>Parses a header or throws <see cref="IntentionFormatException"/> naming <paramref name="what"/>.</summary>
    internal static BlockHeader Parse(ReadOnlySpan<byte> block, string what)
    {
        if (!BlockHeader.TryParse(block, out var header, out var error))
        {
            throw new IntentionFormatException($"{what}: {error}");
        }

        return header;
    }

    internal static void CheckBlockSize(int blockSize)
    {
        if (blockSize < MinBlockSize || blockSize > MaxBlockSize)
        {
            ThrowHelper.ThrowArgumentOutOfRange(nameof(blockSize), $"block size {blockSize} is outside {MinBlockSize}..{MaxBlockSize}");
        }
    }
}
