using System.Collections.Concurrent;
using System.Diagnostics;
using Hyder.Log;

namespace Hyder.Server.Broadcast;

/// <summary>
/// One encoded block frame shared by every peer's send queue: encoded and checksummed once per
/// publish, reference-counted, and returned with its pooled buffer when the last queue is done.
/// Frame objects are recycled through a bounded free list.
/// </summary>
internal sealed class OutboundFrame
{
    private const int FreeLimit = 4096;
    private static readonly ConcurrentQueue<OutboundFrame> s_free = new();

    private byte[] _buffer = [];
    private int _length;
    private int _references;

    /// <summary>The frame's bytes, header included.</summary>
    public ReadOnlySpan<byte> Span => _buffer.AsSpan(0, _length);

    /// <summary>Encodes a block frame with one reference, the publisher's.</summary>
    public static OutboundFrame Rent(long position, uint sequence, ReadOnlySpan<byte> block)
    {
        if (!s_free.TryDequeue(out var frame))
        {
            frame = new OutboundFrame();
        }

        Debug.Assert(frame._references == 0, "a pooled frame is still referenced");
        frame._buffer = BufferPool.Arrays.Rent(Log.Transport.Frame.HeaderSize + block.Length);
        frame._length = BroadcastFrames.WriteBlock(frame._buffer, position, sequence, block);
        frame._references = 1;
        return frame;
    }

    /// <summary>Takes one more reference (a queue holding the frame).</summary>
    public void AddReference()
    {
        var references = Interlocked.Increment(ref _references);
        Debug.Assert(references > 1, "a released frame was referenced again");
    }

    /// <summary>Drops one reference; the last returns the buffer and the frame to their pools.</summary>
    public void Release()
    {
        var references = Interlocked.Decrement(ref _references);
        Debug.Assert(references >= 0, "a frame was released twice");
        if (references != 0)
        {
            return;
        }

        BufferPool.Arrays.Return(_buffer);
        _buffer = [];
        _length = 0;
        if (s_free.Count < FreeLimit)
        {
            s_free.Enqueue(this);
        }
    }
}
