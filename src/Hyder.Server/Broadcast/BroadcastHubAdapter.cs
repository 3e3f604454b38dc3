using System.Buffers;
using Hyder.Server.Core;

namespace Hyder.Server.Broadcast;

/// <summary>
/// Lets a <see cref="TransactionServer"/> use a <see cref="BroadcastHub"/> as its
/// <see cref="IIntentionBroadcast"/>. The adapter owns nothing: start the hub before the server and
/// dispose it after the server stops.
/// </summary>
/// <remarks>
/// The server publishes a block only after the log acknowledged it at that position (the hub's one
/// rule for callers, docs/broadcast.md). Broadcast is an optimisation, so a publish after the hub
/// was disposed (a shutdown race) is dropped rather than failing the transaction that appended it.
/// </remarks>
public sealed class BroadcastHubAdapter : IIntentionBroadcast
{
    private readonly BroadcastHub _hub;

    /// <summary>Wraps <paramref name="hub"/>.</summary>
    /// <param name="hub">A hub; the caller starts and disposes it.</param>
    public BroadcastHubAdapter(BroadcastHub hub)
    {
        ArgumentNullException.ThrowIfNull(hub);
        _hub = hub;
    }

    /// <summary>The hub this adapter sends and takes through.</summary>
    public BroadcastHub Hub => _hub;

    /// <inheritdoc />
    public void Publish(long position, ReadOnlyMemory<byte> block)
    {
        try
        {
            _hub.Publish(position, block);
        }
        catch (ObjectDisposedException)
        {
            // The hub stopped first; peers read this block from the log.
        }
    }

    /// <inheritdoc />
    public bool TryTake(long position, out byte[] block)
    {
        // The cache asks for the block's exact length once, so the array handed out is the block.
        var writer = new ExactWriter();
        if (_hub.TryTake(position, writer) && writer.Written is { } taken)
        {
            block = taken;
            return true;
        }

        block = [];
        return false;
    }

    /// <inheritdoc />
    public void DiscardBelow(long position) => _hub.DiscardBelow(position);

    /// <inheritdoc />
    public void OnReceived(Action received) => _hub.OnReceived(received);

    /// <summary>Writes into one array of the size first asked for; a second request starts over with a copy.</summary>
    private sealed class ExactWriter : IBufferWriter<byte>
    {
        private byte[] _buffer = [];
        private int _length;

        public byte[]? Written => _length == 0 ? null : _length == _buffer.Length ? _buffer : _buffer.AsSpan(0, _length).ToArray();

        public void Advance(int count)
        {
            ArgumentOutOfRangeException.ThrowIfNegative(count);
            ArgumentOutOfRangeException.ThrowIfGreaterThan(count, _buffer.Length - _length);
            _length += count;
        }

        public Memory<byte> GetMemory(int sizeHint = 0)
        {
            Ensure(sizeHint);
            return _buffer.AsMemory(_length);
        }

        public Span<byte> GetSpan(int sizeHint = 0)
        {
            Ensure(sizeHint);
            return _buffer.AsSpan(_length);
        }

        private void Ensure(int sizeHint)
        {
            var free = _buffer.Length - _length;
            if (free > 0 && free >= sizeHint)
            {
                return;
            }

            var grown = new byte[_length + Math.Max(sizeHint, 256)];
            _buffer.AsSpan(0, _length).CopyTo(grown);
            _buffer = grown;
        }
    }
}
