using System.Buffers;
using System.Net;
using System.Net.Sockets;
using Hyder.Log.Transport;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Server.Broadcast;

/// <summary>
/// Intention broadcast (Hyder II §5): after appending an intention's blocks to the shared log, a
/// server publishes them with their log positions to its peers; a peer's log reader takes them
/// from here instead of reading the log, and reads the log for anything missing. An optimisation,
/// never a source of truth: a lost, late, duplicated or corrupt message changes only whether the
/// reader finds a block here — the bytes it finds are the bytes the sender published at that
/// position, checked by CRC-32C end to end.
/// </summary>
/// <remarks>
/// One outbound TCP connection per peer carries this server's blocks; inbound connections carry
/// the peers' blocks into a bounded cache. <see cref="Publish"/> never blocks: a peer whose send
/// queue is full, or that is not connected, misses the block. See docs/broadcast.md.
/// </remarks>
public sealed partial class BroadcastHub : IAsyncDisposable
{
    private readonly BroadcastOptions _options;
    private readonly ILogger _logger;
    private readonly BlockCache _cache;
    private readonly CancellationTokenSource _stopping = new();
    private readonly Lock _linksLock = new();
    private readonly List<Task> _tasks = [];
    private PeerLink[] _links = [];
    private Socket? _listener;
    private long _sequence;
    private int _disposed;
    private Action? _received;

    // Counters, updated with Interlocked; read through Counters.
    internal long PublishedCount;
    internal long SentCount;
    internal long DroppedCount;
    internal long ReceivedCount;
    internal long HitCount;
    internal long MissCount;
    internal long CorruptCount;
    internal long ConnectionCount;
    internal long ReconnectCount;
    internal long RefusedCount;
    internal long TimedOutCount;

    /// <summary>Counts a failed TLS handshake, either way: one that only ran out of time (an overloaded host) is retried, not a refusal.</summary>
    internal void CountHandshakeFailure(ClusterTlsException e) => Interlocked.Increment(ref e.TimedOut ? ref TimedOutCount : ref RefusedCount);

    /// <summary>Creates a hub; nothing listens or connects until <see cref="StartAsync"/>.</summary>
    public BroadcastHub(BroadcastOptions options, ILogger<BroadcastHub>? logger = null)
    {
        ArgumentNullException.ThrowIfNull(options);
        options.Validate();
        _options = options;
        _logger = (ILogger?)logger ?? NullLogger.Instance;
        _cache = new BlockCache(options.CacheCapacity);
    }

    /// <summary>The settings.</summary>
    public BroadcastOptions Options => _options;

    /// <summary>The endpoint the hub listens on (the OS-chosen port when <see cref="BroadcastOptions.Listen"/> has port 0).</summary>
    public IPEndPoint LocalEndPoint =>
        (IPEndPoint?)_listener?.LocalEndPoint ?? throw new InvalidOperationException("The hub has not started.");

    /// <summary>Peers with an outbound connection that completed its handshake.</summary>
    public int ConnectedPeers
    {
        get
        {
            var connected = 0;
            foreach (var link in Volatile.Read(ref _links))
            {
                connected += link.IsConnected ? 1 : 0;
            }

            return connected;
        }
    }

    /// <summary>Blocks in the receive cache.</summary>
    public int CachedBlocks => _cache.Count;

    /// <summary>A snapshot of the counters.</summary>
    public BroadcastCounters Counters => new(
        Interlocked.Read(ref PublishedCount),
        Interlocked.Read(ref SentCount),
        Interlocked.Read(ref DroppedCount),
        Interlocked.Read(ref ReceivedCount),
        Interlocked.Read(ref HitCount),
        Interlocked.Read(ref MissCount),
        Interlocked.Read(ref CorruptCount),
        Interlocked.Read(ref ConnectionCount),
        Interlocked.Read(ref ReconnectCount),
        Interlocked.Read(ref RefusedCount),
        _cache.Ignored,
        _cache.Evicted,
        Interlocked.Read(ref TimedOutCount));

    internal ILogger Logger => _logger;

    internal CancellationToken Stopping => _stopping.Token;

    /// <summary>
    /// Starts listening and connecting to the configured peers. Returns once the listener is bound;
    /// peers connect in the background and are retried with backoff while down.
    /// </summary>
    public Task StartAsync(CancellationToken cancellationToken = default)
    {
        cancellationToken.ThrowIfCancellationRequested();
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        if (_listener is not null)
        {
            throw new InvalidOperationException("The hub has already started.");
        }

        var listener = new Socket(_options.Listen.AddressFamily, SocketType.Stream, ProtocolType.Tcp);
        try
        {
            listener.Bind(_options.Listen);
            listener.Listen(64);
        }
        catch
        {
            listener.Dispose();
            throw;
        }

        _listener = listener;
        LogListening(_options.ServerId, LocalEndPoint);
        Track(AcceptLoopAsync(listener));
        foreach (var peer in _options.Peers)
        {
            AddPeer(peer);
        }

        return Task.CompletedTask;
    }

    /// <summary>Starts sending to another peer (connecting with backoff until it answers).</summary>
    public void AddPeer(IPEndPoint peer)
    {
        ArgumentNullException.ThrowIfNull(peer);
        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        var link = new PeerLink(this, peer);
        lock (_linksLock)
        {
            _links = [.. _links, link];
            _tasks.Add(link.RunAsync());
        }
    }

    /// <summary>
    /// Sends <paramref name="block"/>, which lies at log <paramref name="position"/>, to every
    /// connected peer. Never blocks: the block is encoded once into a pooled buffer and queued per
    /// peer; a peer whose queue is full misses it (counted in <see cref="BroadcastCounters.Dropped"/>).
    /// </summary>
    public void Publish(long position, ReadOnlyMemory<byte> block)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(position);
        if (block.Length == 0 || block.Length > _options.MaxBlockSize)
        {
            ThrowBlockSize(block.Length, _options.MaxBlockSize, nameof(block));
        }

        ObjectDisposedException.ThrowIf(Volatile.Read(ref _disposed) != 0, this);
        Interlocked.Increment(ref PublishedCount);
        var sequence = (uint)Interlocked.Increment(ref _sequence);
        OutboundFrame? frame = null;
        foreach (var link in Volatile.Read(ref _links))
        {
            if (link.Queue is not { } queue)
            {
                continue;
            }

            frame ??= OutboundFrame.Rent(position, sequence, block.Span);
            frame.AddReference();
            if (!queue.Writer.TryWrite(frame))
            {
                frame.Release();
                Interlocked.Increment(ref DroppedCount);
            }
        }

        frame?.Release();
    }

    /// <summary>
    /// Moves the block received for <paramref name="position"/> into <paramref name="destination"/>
    /// and forgets it. False when none was received (or it was evicted): read the log instead.
    /// </summary>
    public bool TryTake(long position, IBufferWriter<byte> destination)
    {
        ArgumentNullException.ThrowIfNull(destination);
        if (_cache.TryTake(position, destination))
        {
            Interlocked.Increment(ref HitCount);
            return true;
        }

        Interlocked.Increment(ref MissCount);
        return false;
    }

    /// <summary>Drops the cached blocks below <paramref name="position"/> (the reader has passed them) and ignores any that arrive later.</summary>
    public void DiscardBelow(long position) => _cache.DiscardBelow(position);

    /// <summary>Stops listening and sending, closes every connection and returns every buffer.</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        await _stopping.CancelAsync().ConfigureAwait(false);
        _listener?.Dispose();
        Task[] tasks;
        lock (_linksLock)
        {
            tasks = [.. _tasks];
        }

        await Task.WhenAll(tasks).ConfigureAwait(false);
        _cache.Dispose();
        _stopping.Dispose();
    }

    /// <summary>
    /// Adds <paramref name="received"/> to what runs after each block that arrives is in the cache
    /// (on the inbound connection's thread: it must be quick and never block).
    /// </summary>
    public void OnReceived(Action received)
    {
        ArgumentNullException.ThrowIfNull(received);
        lock (_linksLock)
        {
            _received += received;
        }
    }

    /// <summary>Called by inbound connections with a block that passed its checks.</summary>
    internal void Deliver(long position, in ReadOnlySequence<byte> block)
    {
        Interlocked.Increment(ref ReceivedCount);
        _cache.Add(position, block);
        Volatile.Read(ref _received)?.Invoke();
    }

    private void Track(Task task)
    {
        lock (_linksLock)
        {
            _tasks.RemoveAll(static t => t.IsCompleted);
            _tasks.Add(task);
        }
    }

    [System.Diagnostics.CodeAnalysis.DoesNotReturn]
    private static void ThrowBlockSize(int length, int max, string paramName) =>
        throw new ArgumentException($"A broadcast block has 1 to {max} bytes, not {length}.", paramName);

    [LoggerMessage(Level = LogLevel.Information, Message = "Broadcast for {ServerId} listening on {EndPoint}")]
    private partial void LogListening(string serverId, IPEndPoint endPoint);
}
