using System.Buffers;
using System.Diagnostics;
using Hyder.Log;

namespace Hyder.Server.Broadcast;

/// <summary>
/// Received blocks by log position, for the log reader. Bounded: at capacity the lowest position
/// goes (the reader consumes in log order, so the oldest is the least likely to be wanted, and a
/// miss only costs a log read). A position already held, or below the floor set by
/// <see cref="DiscardBelow"/>, is ignored. Block bytes live in pooled arrays; the dictionary and
/// heap are sized once, so a steady stream allocates nothing.
/// </summary>
/// <remarks>
/// Invariants (under <see cref="_lock"/>): every key of <see cref="_blocks"/> is ≥ <see cref="_floor"/>
/// and has at least one entry in <see cref="_order"/>; <see cref="_order"/> may also hold positions
/// already taken (removed lazily), and is rebuilt when those outnumber the live ones.
/// </remarks>
internal sealed class BlockCache : IDisposable
{
    private readonly object _lock = new();
    private readonly int _capacity;
    private readonly Dictionary<long, Entry> _blocks;
    private readonly PriorityQueue<long, long> _order;
    private long _floor;

    public BlockCache(int capacity)
    {
        _capacity = capacity;
        _blocks = new Dictionary<long, Entry>(capacity + 1);
        _order = new PriorityQueue<long, long>((2 * capacity) + 2);
    }

    /// <summary>Blocks held now.</summary>
    public int Count
    {
        get
        {
            lock (_lock)
            {
                return _blocks.Count;
            }
        }
    }

    /// <summary>Blocks ignored because the position was already held or below the floor.</summary>
    public long Ignored { get; private set; }

    /// <summary>Blocks evicted to stay within capacity.</summary>
    public long Evicted { get; private set; }

    /// <summary>Copies <paramref name="block"/> in under <paramref name="position"/>; false when it was ignored or evicted at once.</summary>
    public bool Add(long position, in ReadOnlySequence<byte> block)
    {
        var length = (int)block.Length;
        var buffer = BufferPool.Arrays.Rent(length);
        block.CopyTo(buffer);
        byte[]? evicted = null;
        lock (_lock)
        {
            if (position < _floor || _blocks.ContainsKey(position))
            {
                Ignored++;
                evicted = buffer;
            }
            else
            {
                if (_blocks.Count == _capacity)
                {
                    var oldest = PeekOldest();
                    if (position < oldest)
                    {
                        // Older than everything held: it is the one to evict.
                        Evicted++;
                        evicted = buffer;
                    }
                    else
                    {
                        _order.Dequeue();
                        _blocks.Remove(oldest, out var old);
                        evicted = old.Buffer;
                        Evicted++;
                    }
                }

                if (evicted != buffer)
                {
                    _blocks.Add(position, new Entry(buffer, length));
                    _order.Enqueue(position, position);
                    CompactIfStale();
                }
            }

            Debug.Assert(_blocks.Count <= _capacity, "the cache is over capacity");
        }

        if (evicted is not null)
        {
            BufferPool.Arrays.Return(evicted);
        }

        return evicted != buffer;
    }

    /// <summary>Moves the block at <paramref name="position"/> into <paramref name="destination"/> and forgets it.</summary>
    public bool TryTake(long position, IBufferWriter<byte> destination)
    {
        Entry entry;
        lock (_lock)
        {
            if (!_blocks.Remove(position, out entry))
            {
                return false;
            }
        }

        try
        {
            entry.Buffer.AsSpan(0, entry.Length).CopyTo(destination.GetSpan(entry.Length));
            destination.Advance(entry.Length);
        }
        finally
        {
            BufferPool.Arrays.Return(entry.Buffer);
        }

        return true;
    }

    /// <summary>Drops every block below <paramref name="position"/> and ignores such blocks from now on.</summary>
    public void DiscardBelow(long position)
    {
        lock (_lock)
        {
            if (position <= _floor)
            {
                return;
            }

            _floor = position;
            while (_order.TryPeek(out var oldest, out _) && oldest < position)
            {
                _order.Dequeue();
                if (_blocks.Remove(oldest, out var entry))
                {
                    BufferPool.Arrays.Return(entry.Buffer);
                }
            }
        }
    }

    /// <summary>Returns every buffer to the pool.</summary>
    public void Dispose()
    {
        lock (_lock)
        {
            foreach (var entry in _blocks.Values)
            {
                BufferPool.Arrays.Return(entry.Buffer);
            }

            _blocks.Clear();
            _order.Clear();
        }
    }

    /// <summary>The lowest position held; the cache is not empty. Drops taken positions on the way.</summary>
    private long PeekOldest()
    {
        while (true)
        {
            var oldest = _order.Peek();
            if (_blocks.ContainsKey(oldest))
            {
                return oldest;
            }

            _order.Dequeue();
        }
    }

    /// <summary>Rebuilds the heap from the live positions when taken ones outnumber them.</summary>
    private void CompactIfStale()
    {
        if (_order.Count <= (2 * _capacity) + 1)
        {
            return;
        }

        _order.Clear();
        foreach (var position in _blocks.Keys)
        {
            _order.Enqueue(position, position);
        }
    }

    private readonly record struct Entry(byte[] Buffer, int Length);
}
