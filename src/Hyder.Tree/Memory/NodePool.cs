using System.Runtime.CompilerServices;

namespace Hyder.Tree.Memory;

/// <summary>
/// A bounded free list of <see cref="Node"/> objects owned by one thread: no locks, no interlocked
/// operations. Each pipeline stage thread and each executor thread has its own (<see cref="Current"/>).
/// </summary>
/// <remarks>
/// A node handed back is cleared (no references kept alive) and marked pooled; handing back a
/// pooled node again throws <see cref="InvariantViolationException"/> — a double return means two
/// owners, which would corrupt a tree. When the list is full the node is left to the GC
/// (<see cref="Dropped"/> counts those), so a pool never grows without bound.
/// </remarks>
public sealed class NodePool
{
    /// <summary>Capacity of the pools made by <see cref="Current"/>.</summary>
    public const int DefaultCapacity = 1 << 16;

    [ThreadStatic]
    private static NodePool? t_current;

    /// <summary>How many rents ahead a free node is prefetched: far enough for its lines to arrive before a path copy reaches it.</summary>
    private const int PrefetchDistance = 3;

    private readonly Node[] _items;
    private readonly int _giveAt;
    private int _count;

    /// <summary>Creates a pool that keeps at most <paramref name="capacity"/> free nodes.</summary>
    /// <param name="capacity">Free nodes kept at most.</param>
    /// <param name="exchange">Where surplus nodes go and missing ones come from (other threads' pools); null for none.</param>
    public NodePool(int capacity, NodeExchange? exchange = null)
    {
        ArgumentOutOfRangeException.ThrowIfNegativeOrZero(capacity);
        if (exchange is not null && capacity < NodeExchange.Reserve + NodeExchange.BatchSize)
        {
            ThrowHelper.ThrowArgument(nameof(capacity), $"a pool with an exchange needs room for its reserve and a batch ({NodeExchange.Reserve + NodeExchange.BatchSize} nodes)");
        }

        _items = new Node[capacity];
        Exchange = exchange;
        _giveAt = Math.Min(capacity, NodeExchange.Reserve + NodeExchange.BatchSize);
    }

    /// <summary>The exchange this pool trades batches with, if any.</summary>
    public NodeExchange? Exchange { get; }

    /// <summary>The calling thread's pool.</summary>
    public static NodePool Current => t_current ??= new NodePool(DefaultCapacity);

    /// <summary>Nodes created because the free list was empty.</summary>
    public long Allocated { get; private set; }

    /// <summary>Nodes handed back.</summary>
    public long Returned { get; private set; }

    /// <summary>Nodes handed back while the free list was full (left to the GC).</summary>
    public long Dropped { get; private set; }

    /// <summary>Free nodes held now.</summary>
    public int Count => _count;

    /// <summary>Takes a cleared node.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public Node Rent()
    {
        if (_count > 0)
        {
            var n = _items[--_count];
            _items[_count] = null!;
            if (_count > PrefetchDistance)
            {
                // The caller writes every field of a node next, and a free node is cold: last
                // touched on another thread (retired by meld, passed through the exchange).
                CacheHints.Prefetch(_items[_count - 1 - PrefetchDistance]);
            }

            Invariant.Assert((n.Flags & NodeFlags.Pooled) != 0, $"node {Keys.Format(n.Key)} was changed while free in a pool");
            n.Flags = NodeFlags.None;
            return n;
        }

        return RentNew();
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private Node RentNew()
    {
        if (Exchange is not null && Exchange.TryTake(out var batch))
        {
            foreach (var n in batch)
            {
                _items[_count++] = n;
            }

            Array.Clear(batch);
            Exchange.Recycle(batch);
            Taken += batch.Length;
            var node = _items[--_count];
            _items[_count] = null!;
            Invariant.Assert((node.Flags & NodeFlags.Pooled) != 0, $"node {Keys.Format(node.Key)} came from the exchange not free");
            node.Flags = NodeFlags.None;
            return node;
        }

        Allocated++;
        return new Node();
    }

    /// <summary>Nodes taken from the exchange.</summary>
    public long Taken { get; private set; }

    /// <summary>Nodes handed to the exchange.</summary>
    public long Given { get; private set; }

    /// <summary>Hands a node back; it must be reachable from nothing.</summary>
    public void Return(Node node)
    {
        if ((node.Flags & NodeFlags.Pooled) != 0)
        {
            ThrowHelper.ThrowInvariant($"node {Keys.Format(node.Key)} returned to a pool twice");
        }

        node.Clear();
        Returned++;
        if (Exchange is not null && _count >= _giveAt)
        {
            GiveBatch();
        }

        if (_count < _items.Length)
        {
            _items[_count++] = node;
        }
        else
        {
            Dropped++;
        }
    }

    /// <summary>Moves a batch of this pool's free nodes to the exchange, for a thread whose pool runs dry.</summary>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private void GiveBatch()
    {
        var batch = Exchange!.EmptyBatch();
        _count -= batch.Length;
        Array.Copy(_items, _count, batch, 0, batch.Length);
        Array.Clear(_items, _count, batch.Length);
        NodeExchange.AssertFull(batch, "a batch given");
        if (Exchange.Offer(batch))
        {
            Given += batch.Length;
        }
        else
        {
            Dropped += batch.Length;
            Array.Clear(batch);
            Exchange.Recycle(batch);
        }
    }
}
