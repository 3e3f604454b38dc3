using System.Buffers;
using System.Collections.Concurrent;
using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using System.Threading.Channels;
using System.Threading.Tasks.Sources;

namespace Hyder.Log.Transport;

/// <summary>
/// One TCP connection to a log server carrying many requests at once (pipelined, answered in any
/// order). Calls are pooled; a steady stream of requests allocates nothing. When the connection
/// breaks, every call in flight fails with <see cref="UnitUnreachableException"/>.
/// </summary>
internal sealed class FrameClient : IAsyncDisposable
{
    private const int SlotBits = 12;
    private const int MaxInFlight = 1 << SlotBits;

    private readonly Socket _socket;
    private readonly Stream _stream;
    private readonly PipeReader _input;
    private readonly PipeWriter _output;
    private readonly int _maxPayload;
    private readonly ClientCall?[] _pending = new ClientCall?[MaxInFlight];
    private readonly ConcurrentQueue<ClientCall> _free = new();
    private readonly SemaphoreSlim _slots = new(MaxInFlight, MaxInFlight);
    private readonly Channel<ClientCall> _outgoing = Channel.CreateUnbounded<ClientCall>(
        new UnboundedChannelOptions { SingleReader = true, AllowSynchronousContinuations = false });

    private readonly Task _readLoop;
    private readonly Task _writeLoop;
    private int _created;
    private readonly long _requestTimeoutMs;
    private readonly Timer _watchdog;
    private volatile Exception? _broken;

    private FrameClient(Socket socket, Stream stream, string endpoint, int maxPayload, TimeSpan requestTimeout)
    {
        _requestTimeoutMs = (long)requestTimeout.TotalMilliseconds;
        _socket = socket;
        Endpoint = endpoint;
        _maxPayload = maxPayload;
        _stream = stream;
        _input = PipeReader.Create(_stream, new StreamPipeReaderOptions(pool: BufferPool.Segments, bufferSize: 64 * 1024, minimumReadSize: 16 * 1024, leaveOpen: true));
        _output = PipeWriter.Create(_stream, new StreamPipeWriterOptions(pool: BufferPool.Segments, minimumBufferSize: 64 * 1024, leaveOpen: true));
        _watchdog = new Timer(static state => ((FrameClient)state!).CheckOverdue(), this, requestTimeout / 4, requestTimeout / 4);
        _readLoop = ReadLoopAsync();
        _writeLoop = WriteLoopAsync();
    }

    /// <summary>The endpoint this connection talks to.</summary>
    public string Endpoint { get; }

    /// <summary>Whether the connection has failed.</summary>
    public bool IsBroken => _broken is not null;

    /// <summary>
    /// Connects to <paramref name="endpoint"/> ("host:port"), with a TLS handshake when
    /// <paramref name="security"/> asks for one; a refused handshake throws
    /// <see cref="UnitUnreachableException"/> whose message says why.
    /// </summary>
    public static async Task<FrameClient> ConnectAsync(
        string endpoint, TransportSecurity security, int maxPayload, TimeSpan timeout, TimeSpan requestTimeout, CancellationToken cancellationToken)
    {
        var ipEndPoint = ParseEndPoint(endpoint);
        var socket = new Socket(ipEndPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        using var cts = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        cts.CancelAfter(timeout);
        try
        {
            await socket.ConnectAsync(ipEndPoint, cts.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is SocketException or OperationCanceledException && !cancellationToken.IsCancellationRequested)
        {
            socket.Dispose();
            throw new UnitUnreachableException(endpoint, e);
        }

        Stream stream;
        try
        {
            stream = await security.ConnectAsync(socket, ipEndPoint, cancellationToken).ConfigureAwait(false);
        }
        catch (ClusterTlsException e)
        {
            throw new UnitUnreachableException(endpoint, e);
        }

        return new FrameClient(socket, stream, endpoint, maxPayload, requestTimeout);
    }

    /// <summary>Parses "host:port" (an IP address; the log runs on known addresses).</summary>
    public static IPEndPoint ParseEndPoint(string endpoint) =>
        IPEndPoint.TryParse(endpoint, out var parsed) && parsed.Port != 0
            ? parsed
            : throw new ArgumentException($"'{endpoint}' is not an IP endpoint (address:port).", nameof(endpoint));

    /// <summary>
    /// Sends one request; the answer completes the returned task (a read's payload lands in
    /// <paramref name="destination"/>). <typeparamref name="TReply"/> is <see cref="FrameReply"/>,
    /// <see cref="Units.UnitReply"/> or <see cref="Sequencing.TokenReply"/>. Allocation-free while
    /// fewer than 4096 requests are in flight on the connection.
    /// </summary>
    public ValueTask<TReply> Send<TReply>(
        FrameOp op, long epoch, long address, int arg, ReadOnlyMemory<byte> payload, Memory<byte> destination, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        return _slots.Wait(0, CancellationToken.None)
            ? Start<TReply>(op, epoch, address, arg, payload, destination)
            : SendWhenSlotFreeAsync<TReply>(op, epoch, address, arg, payload, destination, cancellationToken);
    }

    private async ValueTask<TReply> SendWhenSlotFreeAsync<TReply>(
        FrameOp op, long epoch, long address, int arg, ReadOnlyMemory<byte> payload, Memory<byte> destination, CancellationToken cancellationToken)
    {
        await _slots.WaitAsync(cancellationToken).ConfigureAwait(false);
        return await Start<TReply>(op, epoch, address, arg, payload, destination).ConfigureAwait(false);
    }

    private ValueTask<TReply> Start<TReply>(FrameOp op, long epoch, long address, int arg, ReadOnlyMemory<byte> payload, Memory<byte> destination)
    {
        var call = RentCall();
        if (_broken is { } broken)
        {
            Release(call);
            return ValueTask.FromException<TReply>(new UnitUnreachableException(Endpoint, broken));
        }

        call.Header = new FrameHeader
        {
            Op = op,
            RequestId = call.Begin(SlotBits),
            Arg = arg,
            Epoch = epoch,
            Address = address,
            PayloadLength = payload.Length,
        };
        call.Payload = payload;
        call.Destination = destination;
        call.StartedAt = Environment.TickCount64;
        Volatile.Write(ref _pending[call.Slot], call);
        if (!_outgoing.Writer.TryWrite(call) || _broken is not null)
        {
            FailPending(call, _broken ?? new UnitUnreachableException(Endpoint, null));
        }

        return new ValueTask<TReply>((IValueTaskSource<TReply>)(object)call, call.Version);
    }

    /// <summary>Takes back a call whose result was read.</summary>
    internal void Release(ClientCall call)
    {
        _free.Enqueue(call);
        _slots.Release();
    }

    private ClientCall RentCall()
    {
        if (_free.TryDequeue(out var call))
        {
            return call;
        }

        // The semaphore bounds calls in use, so at most MaxInFlight are ever created.
        return new ClientCall(this, Interlocked.Increment(ref _created) - 1);
    }

    private async Task WriteLoopAsync()
    {
        var reader = _outgoing.Reader;
        try
        {
            while (await reader.WaitToReadAsync().ConfigureAwait(false))
            {
                while (reader.TryRead(out var call))
                {
                    var length = Frame.HeaderSize + call.Header.PayloadLength;
                    var span = _output.GetSpan(length);
                    Frame.Write(span, call.Header);
                    call.Payload.Span.CopyTo(span[Frame.HeaderSize..]);
                    _output.Advance(length);
                }

                var flush = await _output.FlushAsync().ConfigureAwait(false);
                if (flush.IsCompleted)
                {
                    break;
                }
            }
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException or InvalidOperationException)
        {
            Break(e);
        }
    }

    private async Task ReadLoopAsync()
    {
        try
        {
            while (true)
            {
                var result = await _input.ReadAsync().ConfigureAwait(false);
                var buffer = result.Buffer;
                while (true)
                {
                    var parse = Frame.TryRead(ref buffer, _maxPayload, out var header, out var payload, out var error);
                    if (parse == FrameParse.Incomplete)
                    {
                        break;
                    }

                    if (parse == FrameParse.Malformed)
                    {
                        throw new IOException($"Malformed response from {Endpoint}: {error}");
                    }

                    Deliver(header, payload);
                }

                _input.AdvanceTo(buffer.Start, buffer.End);
                if (result.IsCompleted)
                {
                    throw new IOException($"{Endpoint} closed the connection.");
                }
            }
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException or InvalidOperationException)
        {
            Break(e);
        }
    }

    private void Deliver(in FrameHeader header, in ReadOnlySequence<byte> payload)
    {
        var slot = (int)(header.RequestId & (MaxInFlight - 1));
        var call = Volatile.Read(ref _pending[slot]);
        if (call is null || call.RequestId != header.RequestId
            || Interlocked.CompareExchange(ref _pending[slot], null, call) != call)
        {
            return;
        }

        var status = header.Status;
        var length = (int)payload.Length;
        if (length > call.Destination.Length)
        {
            status = LogStatus.WrongBlockSize;
            length = 0;
        }
        else
        {
            payload.CopyTo(call.Destination.Span);
        }

        call.Complete(new FrameReply(status, header.Epoch, header.Address, length));
    }

    /// <summary>
    /// A server that keeps its connection open but stops answering (stopped process, hung disk) is
    /// treated like a dead one: the connection is broken, every call in flight fails as
    /// unreachable, and callers retry or reconfigure.
    /// </summary>
    private void CheckOverdue()
    {
        var now = Environment.TickCount64;
        for (var i = 0; i < MaxInFlight && _broken is null; i++)
        {
            if (Volatile.Read(ref _pending[i]) is { } call && now - call.StartedAt > _requestTimeoutMs)
            {
                Break(new TimeoutException($"{Endpoint} did not answer within {_requestTimeoutMs} ms."));
            }
        }
    }

    private void Break(Exception cause)
    {
        _broken ??= cause;
        _outgoing.Writer.TryComplete();
        try
        {
            _socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
        }

        for (var i = 0; i < MaxInFlight; i++)
        {
            if (Volatile.Read(ref _pending[i]) is { } call)
            {
                FailPending(call, cause);
            }
        }
    }

    private void FailPending(ClientCall call, Exception cause)
    {
        if (Interlocked.CompareExchange(ref _pending[call.Slot], null, call) == call)
        {
            call.Fail(new UnitUnreachableException(Endpoint, cause));
        }
    }

    /// <inheritdoc />
    public async ValueTask DisposeAsync()
    {
        await _watchdog.DisposeAsync().ConfigureAwait(false);
        Break(new ObjectDisposedException(nameof(FrameClient)));
        await Task.WhenAll(_readLoop, _writeLoop).ConfigureAwait(false);
        try
        {
            await _input.CompleteAsync().ConfigureAwait(false);
            await _output.CompleteAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException)
        {
            // The connection is already broken; what was left unsent is failed above.
        }

        await _stream.DisposeAsync().ConfigureAwait(false);
    }
}

/// <summary>A log server could not be reached or the connection broke with requests in flight.</summary>
public sealed class UnitUnreachableException : SharedLogException
{
    /// <summary>Creates the exception for <paramref name="endpoint"/>.</summary>
    public UnitUnreachableException(string endpoint, Exception? cause)
        : base(cause is ClusterTlsException tls ? $"Log server {endpoint} is unreachable: {tls.Message}" : $"Log server {endpoint} is unreachable.", cause ?? new IOException("connection lost"))
    {
        Endpoint = endpoint;
    }

    /// <summary>Creates the exception.</summary>
    public UnitUnreachableException()
        : this("?", null)
    {
    }

    /// <summary>Creates the exception.</summary>
    public UnitUnreachableException(string message)
        : this(message, null)
    {
    }

    /// <summary>The server's endpoint.</summary>
    public string Endpoint { get; } = "?";
}
