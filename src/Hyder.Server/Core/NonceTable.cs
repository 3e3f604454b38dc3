namespace Hyder.Server.Core;

/// <summary>
/// This server's transactions between their append and the reader meeting their final block,
/// by the encoding's nonce. A dictionary under a lock rather than a
/// <see cref="System.Collections.Concurrent.ConcurrentDictionary{TKey, TValue}"/>: the concurrent
/// one allocates a node per entry, one per commit here, while a dictionary reuses the slots its
/// removed entries free. Two threads use it per transaction (the executor adds, the reader
/// removes), each for a few instructions.
/// </summary>
internal sealed class NonceTable(int capacity)
{
    private readonly Dictionary<long, PendingTransaction> _byNonce = new(capacity);
    private readonly Lock _lock = new();

    /// <summary>Adds (or replaces) the transaction appended under <paramref name="nonce"/>.</summary>
    public PendingTransaction this[long nonce]
    {
        set
        {
            lock (_lock)
            {
                _byNonce[nonce] = value;
            }
        }
    }

    /// <summary>Takes the transaction appended under <paramref name="nonce"/>, if it is this server's.</summary>
    public bool TryRemove(long nonce, out PendingTransaction pending)
    {
        lock (_lock)
        {
            return _byNonce.Remove(nonce, out pending!);
        }
    }

    /// <summary>The transactions waiting now (a copy).</summary>
    public PendingTransaction[] Values
    {
        get
        {
            lock (_lock)
            {
                return [.. _byNonce.Values];
            }
        }
    }
}
