using System.Buffers;
using System.Buffers.Binary;

namespace Hyder.Log.Transport;

/// <summary>Operations of the log protocol; the number is the frame's op byte.</summary>
internal enum FrameOp : byte
{
    Ping = 0,
    Write = 1,
    Read = 2,
    Fill = 3,
    Trim = 4,
    PrefixTrim = 5,
    Seal = 6,
    Highest = 7,
    Token = 16,
    Reset = 17,
    GetProjection = 32,
    InstallProjection = 33,

    /// <summary>Intention broadcast between transaction servers (Hyder.Server); never sent to a log server.</summary>
    BroadcastHello = 48,

    /// <summary>One intention block and its log position, sent by a transaction server to its peers.</summary>
    BroadcastBlock = 49,
}

/// <summary>The fixed part of a frame, requests and responses alike.</summary>
internal struct FrameHeader
{
    public FrameOp Op;
    public LogStatus Status;
    public uint RequestId;
    public int Arg;
    public long Epoch;
    public long Address;
    public int PayloadLength;
}

/// <summary>
/// Length-prefixed binary frames, little-endian, a 32-byte header then the payload:
/// <code>
///  0 u32 body length (28 + payload length)   4 u8 op   5 u8 status   6 u8 version (1)   7 u8 zero
///  8 u32 request id (echoed)  12 i32 argument (token count, …)  16 i64 epoch  24 i64 address or value
/// </code>
/// A response echoes the request id; responses on one connection may come out of order.
/// </summary>
internal static class Frame
{
    /// <summary>Bytes of the frame header.</summary>
    public const int HeaderSize = 32;

    /// <summary>The protocol version written and accepted.</summary>
    public const byte Version = 1;

    /// <summary>Writes <paramref name="header"/> into the first <see cref="HeaderSize"/> bytes.</summary>
    public static void Write(Span<byte> destination, in FrameHeader header)
    {
        BinaryPrimitives.WriteUInt32LittleEndian(destination, (uint)(HeaderSize - 4 + header.PayloadLength));
        destination[4] = (byte)header.Op;
        destination[5] = (byte)header.Status;
        destination[6] = Version;
        destination[7] = 0;
        BinaryPrimitives.WriteUInt32LittleEndian(destination[8..], header.RequestId);
        BinaryPrimitives.WriteInt32LittleEndian(destination[12..], header.Arg);
        BinaryPrimitives.WriteInt64LittleEndian(destination[16..], header.Epoch);
        BinaryPrimitives.WriteInt64LittleEndian(destination[24..], header.Address);
    }

    /// <summary>
    /// Takes one frame off the front of <paramref name="buffer"/>. <see cref="FrameParse.Incomplete"/>
    /// leaves the buffer alone; <see cref="FrameParse.Malformed"/> sets <paramref name="error"/>.
    /// </summary>
    public static FrameParse TryRead(
        ref ReadOnlySequence<byte> buffer,
        int maxPayload,
        out FrameHeader header,
        out ReadOnlySequence<byte> payload,
        out string? error)
    {
        header = default;
        payload = default;
        error = null;
        if (buffer.Length < HeaderSize)
        {
            return FrameParse.Incomplete;
        }

        Span<byte> head = stackalloc byte[HeaderSize];
        buffer.Slice(0, HeaderSize).CopyTo(head);
        var bodyLength = BinaryPrimitives.ReadUInt32LittleEndian(head);
        if (bodyLength < HeaderSize - 4)
        {
            error = $"frame length {bodyLength} is shorter than a header";
            return FrameParse.Malformed;
        }

        if (bodyLength - (HeaderSize - 4) > (uint)maxPayload)
        {
            error = $"frame payload of {bodyLength - (HeaderSize - 4)} bytes exceeds the limit of {maxPayload}";
            return FrameParse.Malformed;
        }

        if (head[6] != Version || head[7] != 0)
        {
            error = $"frame version {head[6]} is not {Version}";
            return FrameParse.Malformed;
        }

        var total = 4 + (long)bodyLength;
        if (buffer.Length < total)
        {
            return FrameParse.Incomplete;
        }

        header.Op = (FrameOp)head[4];
        header.Status = (LogStatus)head[5];
        header.RequestId = BinaryPrimitives.ReadUInt32LittleEndian(head[8..]);
        header.Arg = BinaryPrimitives.ReadInt32LittleEndian(head[12..]);
        header.Epoch = BinaryPrimitives.ReadInt64LittleEndian(head[16..]);
        header.Address = BinaryPrimitives.ReadInt64LittleEndian(head[24..]);
        header.PayloadLength = (int)(bodyLength - (HeaderSize - 4));
        payload = buffer.Slice(HeaderSize, header.PayloadLength);
        buffer = buffer.Slice(total);
        return FrameParse.Frame;
    }

    /// <summary>Whether a request of <paramref name="op"/> may carry a payload.</summary>
    public static bool TakesPayload(FrameOp op) => op is FrameOp.Write or FrameOp.InstallProjection;

    /// <summary>Whether <paramref name="op"/> is an operation the protocol knows.</summary>
    public static bool IsKnown(FrameOp op) => op is <= FrameOp.Highest or FrameOp.Token or FrameOp.Reset
        or FrameOp.GetProjection or FrameOp.InstallProjection;
}

/// <summary>The outcome of <see cref="Frame.TryRead"/>.</summary>
internal enum FrameParse
{
    Incomplete,
    Frame,
    Malformed,
}
