using System.Collections.Concurrent;

namespace Hyder.Tree.Memory;

/// <summary>
/// Moves free nodes between threads' pools in batches. Nodes flow one way in the pipeline: the
/// executor and premeld threads make nodes that final meld later frees into its own pool. Without
/// a way back, the producing pools allocate forever while the final pool overflows to the GC.
/// A pool that overflows hands a batch here; a pool that runs dry takes one.
/// </summary>
/// <remarks>
/// One interlocked queue operation per batch (<see cref="BatchSize"/> nodes), never per node; the
/// batch arrays themselves circulate, so steady state allocates nothing. Bounded: at most
/// <see cref="MaxBatches"/> batches wait here, anything beyond is left to the GC.
/// </remarks>
public sealed class NodeExchange
{
    /// <summary>Nodes moved per batch.</summary>
    public const int BatchSize = 256;

    /// <summary>
    /// Free nodes a pool keeps for its own thread before it gives batches away: a meld makes tens
    /// to hundreds of nodes, so this covers several melds without a trip to the exchange.
    /// </summary>
    public const int Reserve = 4 * BatchSize;

    /// <summary>Batches held at most.</summary>
    public const int MaxBatches = 1024;

    private readonly ConcurrentQueue<Node[]> _full = new();
    private readonly ConcurrentQueue<Node[]> _empty = new();
    private int _fullCount;

    /// <summary>Batches waiting to be taken.</summary>
    public int Batches => Volatile.Read(ref _fullCount);

    /// <summary>An empty batch array (reused when one is available).</summary>
    internal Node[] EmptyBatch()
    {
        var batch = _empty.TryDequeue(out var spare) ? spare : new Node[BatchSize];
        AssertEmpty(batch, "an empty batch handed out");
        return batch;
    }

    /// <summary>Offers a full batch; false when the exchange is full (the caller keeps or drops it).</summary>
    internal bool Offer(Node[] batch)
    {
        AssertFull(batch, "a batch offered");
        if (Interlocked.Increment(ref _fullCount) > MaxBatches)
        {
            Interlocked.Decrement(ref _fullCount);
            return false;
        }

        _full.Enqueue(batch);
        return true;
    }

    /// <summary>Takes a full batch, if any.</summary>
    internal bool TryTake(out Node[] batch)
    {
        if (_full.TryDequeue(out batch!))
        {
            AssertFull(batch, "a batch taken");
            Interlocked.Decrement(ref _fullCount);
            return true;
        }

        return false;
    }

    /// <summary>Gives back a batch array whose nodes were taken.</summary>
    internal void Recycle(Node[] batch)
    {
        AssertEmpty(batch, "a batch recycled");
        _empty.Enqueue(batch);
    }

    /// <summary>
    /// Debug: a full batch holds <see cref="BatchSize"/> free nodes, each marked pooled. A node
    /// that is not was handed off while still owned (or changed after it was handed back), and
    /// two threads would build with it.
    /// </summary>
    [System.Diagnostics.Conditional("DEBUG")]
    internal static void AssertFull(Node[] batch, string what)
    {
        Invariant.Assert(batch.Length == BatchSize, $"{what} has {batch.Length} slots, not {BatchSize}");
        foreach (var n in batch)
        {
            Invariant.Assert(n is not null && (n.Flags & NodeFlags.Pooled) != 0, $"{what} holds a node that is not free: {(n is null ? "none" : Keys.Format(n.Key))}");
        }
    }

    /// <summary>Debug: an empty batch keeps no node alive (and hands none out twice).</summary>
    [System.Diagnostics.Conditional("DEBUG")]
    private static void AssertEmpty(Node[] batch, string what)
    {
        Invariant.Assert(batch.Length == BatchSize, $"{what} has {batch.Length} slots, not {BatchSize}");
        Invariant.Assert(Array.TrueForAll(batch, n => n is null), $"{what} still holds nodes");
    }
}
