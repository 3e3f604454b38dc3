namespace Hyder.Server.Broadcast;

/// <summary>A snapshot of a <see cref="BroadcastHub"/>'s counters, all since it was created.</summary>
/// <param name="Published">Calls to <see cref="BroadcastHub.Publish"/>.</param>
/// <param name="Sent">Block frames written to a peer's socket (one per peer per block).</param>
/// <param name="Dropped">Block frames not queued for a connected peer because its send queue was full or closing.</param>
/// <param name="Received">Block frames received that passed every check (duplicates included).</param>
/// <param name="Hits">Calls to <see cref="BroadcastHub.TryTake"/> that found the block.</param>
/// <param name="Misses">Calls to <see cref="BroadcastHub.TryTake"/> that did not; the reader goes to the log.</param>
/// <param name="CorruptFrames">Inbound connections closed for a malformed frame or a checksum mismatch.</param>
/// <param name="Connections">Outbound connections that completed their handshake.</param>
/// <param name="Reconnects">Outbound handshakes with a peer after the first one with that peer.</param>
/// <param name="Refused">Handshakes refused, either way: a TLS peer this member does not accept (or that does not accept it), another cluster id, or a peer using this server's id.</param>
/// <param name="Ignored">Received blocks not cached: the position was held already or was below the discard floor.</param>
/// <param name="Evicted">Cached blocks evicted, lowest position first, to stay within the cache capacity.</param>
/// <param name="TimedOut">TLS handshakes, either way, that did not finish within the handshake timeout (a slow or overloaded peer); the link retries.</param>
public readonly record struct BroadcastCounters(
    long Published,
    long Sent,
    long Dropped,
    long Received,
    long Hits,
    long Misses,
    long CorruptFrames,
    long Connections,
    long Reconnects,
    long Refused,
    long Ignored,
    long Evicted,
    long TimedOut);
