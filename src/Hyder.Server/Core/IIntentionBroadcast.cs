namespace Hyder.Server.Core;

/// <summary>
/// What the server needs from intention broadcast (Hyder II §5): send the blocks it appended to
/// its peers, and take blocks peers sent so the reader need not read them from the log. Only an
/// optimisation: a block not taken here is read from the log.
/// </summary>
public interface IIntentionBroadcast
{
    /// <summary>Sends a block this server appended at <paramref name="position"/> to every peer; never blocks.</summary>
    void Publish(long position, ReadOnlyMemory<byte> block);

    /// <summary>Takes the block a peer sent for <paramref name="position"/>, if one arrived.</summary>
    bool TryTake(long position, out byte[] block);

    /// <summary>Forgets everything below <paramref name="position"/> (the reader has passed it).</summary>
    void DiscardBelow(long position);

    /// <summary>
    /// Calls <paramref name="received"/> each time a peer's block arrives, on the receiving
    /// connection's thread, after the block can be taken: the log reader waiting at the tail
    /// wakes at once instead of at its next poll. It must return quickly and never block.
    /// </summary>
    void OnReceived(Action received);
}
