using System.Buffers;
using System.Buffers.Binary;
using System.Text;
using Hyder.Log;
using Hyder.Log.Transport;

namespace Hyder.Server.Broadcast;

/// <summary>
/// The broadcast's two frames, in the log transport's 32-byte frame header (<see cref="Frame"/>):
/// <code>
/// BroadcastBlock (49): request id = sender's publish sequence (low 32 bits, informational)
///                      argument   = CRC-32C over (position as i64 LE, then the block)
///                      epoch      = 0, address = log position (≥ 0), payload = the block (≥ 1 byte)
/// BroadcastHello (48): status Ok (hello / accepted) or Conflict (refused); argument = CRC-32C of
///                      the payload; epoch = 0; address = 0; payload = u8 n, n bytes cluster id
///                      (UTF-8), u8 m, m bytes server id (UTF-8)
/// </code>
/// The checksum covers the position so that a damaged header cannot file a good block under a
/// wrong position.
/// </summary>
internal static class BroadcastFrames
{
    /// <summary>The longest cluster or server id, in UTF-8 bytes.</summary>
    public const int MaxIdBytes = 255;

    /// <summary>The largest hello payload.</summary>
    public const int MaxHelloPayload = 2 + (2 * MaxIdBytes);

    /// <summary>Writes a block frame (header and payload) into <paramref name="destination"/>; returns its length.</summary>
    public static int WriteBlock(Span<byte> destination, long position, uint sequence, ReadOnlySpan<byte> block)
    {
        var header = new FrameHeader
        {
            Op = FrameOp.BroadcastBlock,
            Status = LogStatus.Ok,
            RequestId = sequence,
            Arg = (int)BlockChecksum(position, block),
            Epoch = 0,
            Address = position,
            PayloadLength = block.Length,
        };
        Frame.Write(destination, header);
        block.CopyTo(destination[Frame.HeaderSize..]);
        return Frame.HeaderSize + block.Length;
    }

    /// <summary>The checksum a block frame carries.</summary>
    public static uint BlockChecksum(long position, ReadOnlySpan<byte> block)
    {
        Span<byte> prefix = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(prefix, position);
        return Crc32C.Append(Crc32C.Compute(prefix), block);
    }

    /// <summary>The checksum of a received block, which may span pipe segments.</summary>
    public static uint BlockChecksum(long position, in ReadOnlySequence<byte> block)
    {
        Span<byte> prefix = stackalloc byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(prefix, position);
        var crc = Crc32C.Compute(prefix);
        foreach (var segment in block)
        {
            crc = Crc32C.Append(crc, segment.Span);
        }

        return crc;
    }

    /// <summary>Checks a received frame that should be a block; returns why it is not, or null.</summary>
    public static string? ValidateBlock(in FrameHeader header, in ReadOnlySequence<byte> payload)
    {
        if (header.Op != FrameOp.BroadcastBlock)
        {
            return $"op {(byte)header.Op} where a block frame was expected";
        }

        if (header.Status != LogStatus.Ok || header.Epoch != 0)
        {
            return "reserved fields of a block frame are set";
        }

        if (header.Address < 0)
        {
            return $"negative position {header.Address}";
        }

        if (header.PayloadLength == 0)
        {
            return "empty block";
        }

        if (BlockChecksum(header.Address, payload) != (uint)header.Arg)
        {
            return $"checksum mismatch on the block at position {header.Address}";
        }

        return null;
    }

    /// <summary>Writes a hello frame; returns its length (at most <see cref="Frame.HeaderSize"/> + <see cref="MaxHelloPayload"/>).</summary>
    public static int WriteHello(Span<byte> destination, LogStatus status, string clusterId, string serverId)
    {
        var payload = destination[Frame.HeaderSize..];
        var n = Encoding.UTF8.GetBytes(clusterId, payload[1..]);
        payload[0] = checked((byte)n);
        var m = Encoding.UTF8.GetBytes(serverId, payload[(2 + n)..]);
        payload[1 + n] = checked((byte)m);
        var length = 2 + n + m;
        Frame.Write(destination, new FrameHeader
        {
            Op = FrameOp.BroadcastHello,
            Status = status,
            Arg = (int)Crc32C.Compute(payload[..length]),
            PayloadLength = length,
        });
        return Frame.HeaderSize + length;
    }

    /// <summary>Decodes a hello frame; returns why it is malformed, or null.</summary>
    public static string? ReadHello(in FrameHeader header, in ReadOnlySequence<byte> payload, out string clusterId, out string serverId)
    {
        clusterId = serverId = "";
        if (header.Op != FrameOp.BroadcastHello)
        {
            return $"op {(byte)header.Op} where a hello was expected";
        }

        if (header.Epoch != 0 || header.Address != 0 || header.PayloadLength is < 2 or > MaxHelloPayload)
        {
            return "malformed hello header";
        }

        Span<byte> bytes = stackalloc byte[MaxHelloPayload];
        bytes = bytes[..header.PayloadLength];
        payload.CopyTo(bytes);
        if (Crc32C.Compute(bytes) != (uint)header.Arg)
        {
            return "checksum mismatch on the hello";
        }

        var n = bytes[0];
        if (1 + n >= bytes.Length || 2 + n + bytes[1 + n] != bytes.Length)
        {
            return "hello ids do not fill the payload";
        }

        try
        {
            var strict = new UTF8Encoding(encoderShouldEmitUTF8Identifier: false, throwOnInvalidBytes: true);
            clusterId = strict.GetString(bytes.Slice(1, n));
            serverId = strict.GetString(bytes[(2 + n)..]);
        }
        catch (DecoderFallbackException)
        {
            return "hello ids are not UTF-8";
        }

        return null;
    }
}
