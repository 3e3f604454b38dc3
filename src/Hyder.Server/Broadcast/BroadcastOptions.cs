using System.Net;
using Hyder.Log.Transport;

namespace Hyder.Server.Broadcast;

/// <summary>
/// Settings of a <see cref="BroadcastHub"/>. Every server of a cluster uses the same
/// <see cref="ClusterId"/>; <see cref="ServerId"/> names this server to its peers.
/// </summary>
public sealed class BroadcastOptions
{
    /// <summary>The cluster's name; a peer that names another cluster is refused.</summary>
    public required string ClusterId { get; init; }

    /// <summary>This server's name, sent in the handshake.</summary>
    public required string ServerId { get; init; }

    /// <summary>Where to accept peers' connections; port 0 lets the OS choose (see <see cref="BroadcastHub.LocalEndPoint"/>).</summary>
    public IPEndPoint Listen { get; init; } = new(IPAddress.Loopback, 0);

    /// <summary>The peers to send to; more can be added with <see cref="BroadcastHub.AddPeer"/>.</summary>
    public IReadOnlyList<IPEndPoint> Peers { get; init; } = [];

    /// <summary>Received blocks kept for the log reader; past this the lowest positions are evicted.</summary>
    public int CacheCapacity { get; init; } = 1024;

    /// <summary>Frames waiting to be sent to one peer; a publish that finds the queue full is dropped for that peer.</summary>
    public int SendQueueCapacity { get; init; } = 256;

    /// <summary>The largest block; a frame carrying more is malformed.</summary>
    public int MaxBlockSize { get; init; } = 64 * 1024;

    /// <summary>The first wait before reconnecting to a peer; it doubles after each failure.</summary>
    public TimeSpan ReconnectInitialDelay { get; init; } = TimeSpan.FromMilliseconds(50);

    /// <summary>The longest wait between reconnection attempts.</summary>
    public TimeSpan ReconnectMaxDelay { get; init; } = TimeSpan.FromSeconds(2);

    /// <summary>
    /// Plaintext (the default, for tests and in-process clusters) or mutual TLS with the cluster
    /// CA: both directions then present and check member certificates before the hello exchange,
    /// and a peer with a certificate of another CA, none, or speaking plaintext is refused.
    /// </summary>
    public TransportSecurity Security { get; init; } = TransportSecurity.Plaintext;

    /// <summary>How long a connect plus handshake may take before the attempt counts as failed.</summary>
    public TimeSpan HandshakeTimeout { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>Throws when a setting is out of range.</summary>
    internal void Validate()
    {
        ArgumentException.ThrowIfNullOrEmpty(ClusterId);
        ArgumentException.ThrowIfNullOrEmpty(ServerId);
        ArgumentNullException.ThrowIfNull(Listen);
        ArgumentNullException.ThrowIfNull(Peers);
        ArgumentNullException.ThrowIfNull(Security);
        if (System.Text.Encoding.UTF8.GetByteCount(ClusterId) > BroadcastFrames.MaxIdBytes
            || System.Text.Encoding.UTF8.GetByteCount(ServerId) > BroadcastFrames.MaxIdBytes)
        {
            throw new ArgumentException($"Cluster and server ids are at most {BroadcastFrames.MaxIdBytes} UTF-8 bytes.");
        }

        ArgumentOutOfRangeException.ThrowIfLessThan(CacheCapacity, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(SendQueueCapacity, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(MaxBlockSize, 1);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(MaxBlockSize, 1 << 20);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(ReconnectInitialDelay, TimeSpan.Zero);
        ArgumentOutOfRangeException.ThrowIfLessThan(ReconnectMaxDelay, ReconnectInitialDelay);
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(HandshakeTimeout, TimeSpan.Zero);
    }
}
