namespace Hyder.Server.Follower;

/// <summary>
/// The duplicate-copy rule's memory (docs/server.md): the nonce of each intention of the last
/// W + 2 ordinals, with the ordinal of its first copy. An append is not idempotent: a log client
/// that retries across a new epoch can leave two copies of one intention in the log; the first
/// decides the transaction, and every server aborts a later copy alike.
/// </summary>
/// <remarks>
/// Remembering W + 2 ordinals is enough, and a server restarted from a checkpoint agrees with its
/// peers, because the reader's earlier rules decide every other copy: a copy of snapshot s comes
/// after its first copy v₁ &gt; s, so if v₁ is older than that, the copy's snapshot is more than W
/// behind it; and if v₁ precedes the checkpoint barrier a restarted server starts from, so does s.
/// </remarks>
/// <param name="window">W, the cluster's state window.</param>
internal sealed class FirstCopies(int window)
{
    private readonly Dictionary<long, long> _firstOrdinal = [];
    private readonly Queue<(long Ordinal, long Nonce)> _order = new();

    /// <summary>Nonces remembered now (tests).</summary>
    public int Count => _firstOrdinal.Count;

    /// <summary>
    /// The ordinal of an earlier copy of intention <paramref name="ordinal"/> (nonce
    /// <paramref name="nonce"/>), or null when it is the first; remembers it then. Ordinals must
    /// come in increasing order.
    /// </summary>
    public long? FirstCopyOf(long nonce, long ordinal)
    {
        while (_order.TryPeek(out var oldest) && oldest.Ordinal < ordinal - window - 1)
        {
            _order.Dequeue();
            if (_firstOrdinal.TryGetValue(oldest.Nonce, out var first) && first == oldest.Ordinal)
            {
                _firstOrdinal.Remove(oldest.Nonce);
            }
        }

        if (_firstOrdinal.TryGetValue(nonce, out var earlier))
        {
            return earlier;
        }

        _firstOrdinal.Add(nonce, ordinal);
        _order.Enqueue((ordinal, nonce));
        return null;
    }
}
