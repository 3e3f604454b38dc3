using System.Buffers;
using System.Buffers.Binary;
using System.Diagnostics.CodeAnalysis;
using System.IO.Pipelines;
using Google.Protobuf;

namespace Hyder.Rpc;

/// <summary>
/// Length-prefixed messages: <c>Compressed-Flag (1 byte) Message-Length (4 bytes, big-endian) Message</c>.
/// Reading parses straight from the pipe's buffers and writing serializes straight into them, so a
/// message costs no allocation beyond the message object itself.
/// </summary>
internal static class MessageFraming
{
    /// <summary>
    /// Reads the next message, or null at a clean end of the stream. Throws
    /// <see cref="RpcException"/> for a compressed message (no <c>grpc-encoding</c> is ever
    /// negotiated here), a message over <paramref name="maxSize"/>, a truncated frame or a
    /// message that does not parse.
    /// </summary>
    public static async ValueTask<T?> ReadAsync<T>(PipeReader reader, MessageParser<T> parser, int maxSize, CancellationToken cancellationToken, TimeSpan? messageTimeout = null)
        where T : class, IMessage<T>
    {
        // Armed at a message's first byte: a sender that trickles or stalls inside a message is cut off.
        CancellationTokenSource? slow = null;
        try
        {
            while (true)
            {
                ReadResult result;
                try
                {
                    result = await reader.ReadAsync(slow?.Token ?? cancellationToken).ConfigureAwait(false);
                }
                catch (OperationCanceledException) when (slow is { IsCancellationRequested: true } && !cancellationToken.IsCancellationRequested)
                {
                    throw SlowMessage(messageTimeout!.Value);
                }

                var buffer = result.Buffer;
                if (result.IsCanceled)
                {
                    reader.AdvanceTo(buffer.Start);
                    throw new OperationCanceledException(cancellationToken);
                }

                T? message;
                bool parsed;
                try
                {
                    parsed = TryParse(ref buffer, parser, maxSize, out message);
                }
                catch
                {
                    reader.AdvanceTo(result.Buffer.Start);
                    throw;
                }

                if (parsed)
                {
                    reader.AdvanceTo(buffer.Start);
                    return message;
                }

                if (result.IsCompleted)
                {
                    reader.AdvanceTo(buffer.End);
                    if (buffer.Length == 0)
                    {
                        return null;
                    }

                    ThrowStatus(StatusCode.Internal, "Incomplete message: the stream ended inside a length-prefixed message.");
                }

                if (slow is null && messageTimeout is { } timeout && buffer.Length > 0)
                {
                    slow = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
                    slow.CancelAfter(timeout);
                }

                // Need more bytes: everything seen so far is examined, nothing consumed.
                reader.AdvanceTo(buffer.Start, buffer.End);
            }
        }
        finally
        {
            slow?.Dispose();
        }
    }

    /// <summary>The status of a request that did not arrive within the server's request timeout.</summary>
    public static RpcException SlowMessage(TimeSpan timeout) =>
        new(StatusCode.DeadlineExceeded, $"The request did not arrive within the server's request timeout ({timeout.TotalSeconds:0.###} s).");

    /// <summary>Frames and serializes one message into the writer (not flushed).</summary>
    public static void Write(IBufferWriter<byte> writer, IMessage message, int maxSize)
    {
        var size = message.CalculateSize();
        if (size > maxSize)
        {
            ThrowStatus(StatusCode.ResourceExhausted, $"Sending message exceeds the maximum configured message size ({size} > {maxSize} bytes).");
        }

        var header = writer.GetSpan(GrpcProtocol.FrameHeaderSize);
        header[0] = 0;
        BinaryPrimitives.WriteUInt32BigEndian(header[1..], (uint)size);
        writer.Advance(GrpcProtocol.FrameHeaderSize);
        message.WriteTo(writer);
    }

    private static bool TryParse<T>(ref ReadOnlySequence<byte> buffer, MessageParser<T> parser, int maxSize, out T? message)
        where T : class, IMessage<T>
    {
        message = null;
        if (buffer.Length < GrpcProtocol.FrameHeaderSize)
        {
            return false;
        }

        Span<byte> header = stackalloc byte[GrpcProtocol.FrameHeaderSize];
        buffer.Slice(0, GrpcProtocol.FrameHeaderSize).CopyTo(header);
        switch (header[0])
        {
            case 0:
                break;
            case 1:
                // PROTOCOL-HTTP2.md: with no grpc-encoding (or identity) the flag must be 0.
                ThrowStatus(StatusCode.Internal, "A compressed message was received but no grpc-encoding was negotiated.");
                break;
            default:
                ThrowStatus(StatusCode.Internal, $"Invalid compressed flag {header[0]} in a message prefix.");
                break;
        }

        var length = BinaryPrimitives.ReadUInt32BigEndian(header[1..]);
        if (length > (uint)maxSize)
        {
            ThrowStatus(StatusCode.ResourceExhausted, $"Received message exceeds the maximum configured message size ({length} > {maxSize} bytes).");
        }

        if (buffer.Length - GrpcProtocol.FrameHeaderSize < length)
        {
            return false;
        }

        var body = buffer.Slice(GrpcProtocol.FrameHeaderSize, length);
        try
        {
            message = parser.ParseFrom(body);
        }
        catch (Exception e) when (e is InvalidProtocolBufferException or IndexOutOfRangeException or ArgumentException or InvalidOperationException)
        {
            // Google.Protobuf throws more than InvalidProtocolBufferException on malformed input: a
            // nested length near int.MaxValue overflows its limit arithmetic and ends in an
            // IndexOutOfRangeException or ArgumentOutOfRangeException (protocolbuffers/protobuf#26856).
            throw new RpcException(new Status(StatusCode.Internal, "Failed to deserialize a message: " + e.Message), null, e);
        }

        buffer = buffer.Slice(body.End);
        return true;
    }

    [DoesNotReturn]
    public static void ThrowStatus(StatusCode code, string detail) => throw new RpcException(code, detail);
}
