namespace Hyder.Log.Transport;

/// <summary>
/// A lazily (re)connected <see cref="FrameClient"/> to one endpoint. After a failed connect,
/// calls fail fast for a short back-off instead of hammering a dead server.
/// </summary>
internal sealed class RemoteConnection : IAsyncDisposable
{
    private static readonly TimeSpan s_backoff = TimeSpan.FromMilliseconds(100);

    private readonly SemaphoreSlim _connect = new(1, 1);
    private readonly int _maxPayload;
    private readonly TransportSecurity _security;
    private readonly TimeSpan _connectTimeout;
    private readonly TimeSpan _requestTimeout;
    private FrameClient? _client;
    private long _lastFailure;
    private bool _disposed;

    public RemoteConnection(string endpoint, TransportSecurity security, int maxPayload, TimeSpan connectTimeout, TimeSpan requestTimeout)
    {
        _security = security;
        _requestTimeout = requestTimeout;
        Endpoint = endpoint;
        _maxPayload = maxPayload;
        _connectTimeout = connectTimeout;
    }

    public string Endpoint { get; }

    /// <summary>Sends one request, connecting first if needed; see <see cref="FrameClient.Send{TReply}"/>.</summary>
    public ValueTask<TReply> Send<TReply>(
        FrameOp op, long epoch, long address, int arg, ReadOnlyMemory<byte> payload, Memory<byte> destination, CancellationToken cancellationToken)
    {
        var client = Volatile.Read(ref _client);
        return client is { IsBroken: false }
            ? client.Send<TReply>(op, epoch, address, arg, payload, destination, cancellationToken)
            : ConnectAndSendAsync<TReply>(op, epoch, address, arg, payload, destination, cancellationToken);
    }

    private async ValueTask<TReply> ConnectAndSendAsync<TReply>(
        FrameOp op, long epoch, long address, int arg, ReadOnlyMemory<byte> payload, Memory<byte> destination, CancellationToken cancellationToken)
    {
        var client = await ConnectAsync(cancellationToken).ConfigureAwait(false);
        return await client.Send<TReply>(op, epoch, address, arg, payload, destination, cancellationToken).ConfigureAwait(false);
    }

    private async Task<FrameClient> ConnectAsync(CancellationToken cancellationToken)
    {
        await _connect.WaitAsync(cancellationToken).ConfigureAwait(false);
        try
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_client is { IsBroken: false } current)
            {
                return current;
            }

            if (Environment.TickCount64 - Volatile.Read(ref _lastFailure) < s_backoff.TotalMilliseconds)
            {
                throw new UnitUnreachableException(Endpoint, null);
            }

            if (_client is not null)
            {
                await _client.DisposeAsync().ConfigureAwait(false);
                _client = null;
            }

            try
            {
                _client = await FrameClient.ConnectAsync(Endpoint, _security, _maxPayload, _connectTimeout, _requestTimeout, cancellationToken).ConfigureAwait(false);
                return _client;
            }
            catch (UnitUnreachableException)
            {
                Volatile.Write(ref _lastFailure, Environment.TickCount64);
                throw;
            }
        }
        finally
        {
            _connect.Release();
        }
    }

    public async ValueTask DisposeAsync()
    {
        await _connect.WaitAsync().ConfigureAwait(false);
        try
        {
            _disposed = true;
            if (_client is not null)
            {
                await _client.DisposeAsync().ConfigureAwait(false);
                _client = null;
            }
        }
        finally
        {
            _connect.Release();
        }
    }
}
