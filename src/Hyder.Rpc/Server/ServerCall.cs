using System.Net.Sockets;
using Google.Protobuf;
using Hyder.Rpc.Security;
using Microsoft.AspNetCore.Http;

namespace Hyder.Rpc;

/// <summary>
/// One call on the server: reads requests from the request's <c>BodyReader</c>, writes responses
/// to the response's <c>BodyWriter</c>, and ends the call with its status exactly once. A write
/// lock orders the handler's writes against the deadline, which may end the call while the handler
/// still runs.
/// </summary>
internal sealed class ServerCall : ServerCallContext, IDisposable
{
    // CancellationTokenSource timers take at most uint.MaxValue - 1 ms (49 days); a longer timeout is no deadline.
    private static readonly TimeSpan s_maxTimer = TimeSpan.FromDays(49);

    private readonly HttpContext _http;
    private readonly RpcServerOptions _options;
    private readonly CancellationTokenSource? _deadlineCts;
    private readonly CancellationTokenSource _callCts;
    private readonly CancellationTokenRegistration _deadlineRegistration;
    private readonly TaskCompletionSource? _deadlineReached;
    private readonly SemaphoreSlim _writeLock = new(1, 1);
    private readonly Metadata _responseTrailers = new();
    private Metadata? _requestHeaders;
    private bool _completed; // guarded by _writeLock

    public ServerCall(HttpContext http, RpcServerOptions options, string method, TimeSpan? timeout, CallerIdentity? caller)
    {
        _http = http;
        _options = options;
        Method = method;
        Caller = caller;
        if (timeout is { } t && t < s_maxTimer)
        {
            Deadline = DateTime.UtcNow + t;
            _deadlineCts = new CancellationTokenSource(t);
            _callCts = CancellationTokenSource.CreateLinkedTokenSource(http.RequestAborted, _deadlineCts.Token);
            _deadlineReached = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            _deadlineRegistration = _deadlineCts.Token.Register(static s => ((TaskCompletionSource)s!).TrySetResult(), _deadlineReached);
        }
        else
        {
            Deadline = DateTime.MaxValue;
            _callCts = CancellationTokenSource.CreateLinkedTokenSource(http.RequestAborted);
        }
    }

    public override string Method { get; }

    public override CallerIdentity? Caller { get; }

    public override string Peer
    {
        get
        {
            var connection = _http.Connection;
            return connection.RemoteIpAddress switch
            {
                null => "unknown",
                { AddressFamily: AddressFamily.InterNetworkV6 } a => $"ipv6:[{a}]:{connection.RemotePort}",
                var a => $"ipv4:{a}:{connection.RemotePort}",
            };
        }
    }

    public override DateTime Deadline { get; }

    public override Metadata RequestHeaders => _requestHeaders ??= ReadRequestHeaders();

    public override Metadata ResponseTrailers => _responseTrailers;

    public override CancellationToken CancellationToken => _callCts.Token;

    public override Status Status { get; set; } = Status.DefaultSuccess;

    public override HttpContext HttpContext => _http;

    /// <summary>Completes when the deadline passes; null when the call has none.</summary>
    public Task? DeadlineReached => _deadlineReached?.Task;

    public bool DeadlineExceeded => _deadlineCts?.IsCancellationRequested == true;

    public bool ClientCancelled => _http.RequestAborted.IsCancellationRequested;

    /// <summary>
    /// Reads the next request of a streaming call, or null at the end of the request stream; a
    /// message must arrive within the request timeout from its first byte.
    /// </summary>
    public Task<T?> ReadAsync<T>(MessageParser<T> parser, CancellationToken cancellationToken)
        where T : class, IMessage<T> =>
        ReadAsync(parser, _options.Limits.RequestTimeout, cancellationToken);

    private async Task<T?> ReadAsync<T>(MessageParser<T> parser, TimeSpan? messageTimeout, CancellationToken cancellationToken)
        where T : class, IMessage<T>
    {
        using var linked = cancellationToken.CanBeCanceled && cancellationToken != _callCts.Token
            ? CancellationTokenSource.CreateLinkedTokenSource(_callCts.Token, cancellationToken)
            : null;
        try
        {
            return await MessageFraming.ReadAsync(_http.Request.BodyReader, parser, _options.MaxReceiveMessageSize, linked?.Token ?? _callCts.Token, messageTimeout).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or OperationCanceledException)
        {
            throw Cancelled(e);
        }
    }

    /// <summary>
    /// Reads the one request of a unary or server-streaming call: the message and the end of the
    /// request stream must arrive within the request timeout from the call's start.
    /// </summary>
    public async Task<T> ReadSingleAsync<T>(MessageParser<T> parser)
        where T : class, IMessage<T>
    {
        using var slow = _options.Limits.RequestTimeout is { } timeout && timeout < s_maxTimer ? new CancellationTokenSource(timeout) : null;
        var token = slow?.Token ?? default;
        try
        {
            var request = await ReadAsync(parser, null, token).ConfigureAwait(false)
                ?? throw new RpcException(StatusCode.Internal, "The request stream ended without a message.");
            if (await ReadAsync(parser, null, token).ConfigureAwait(false) is not null)
            {
                throw new RpcException(StatusCode.Internal, "More than one request message for a method that takes one.");
            }

            return request;
        }
        catch (OperationCanceledException) when (slow is { IsCancellationRequested: true } && !_callCts.IsCancellationRequested)
        {
            throw MessageFraming.SlowMessage(_options.Limits.RequestTimeout!.Value);
        }
    }

    /// <summary>Writes one response message and flushes it.</summary>
    public async Task WriteAsync(IMessage message)
    {
        await _writeLock.WaitAsync(CancellationToken.None).ConfigureAwait(false);
        try
        {
            ThrowIfCompleted();
            StartResponse(null);
            var writer = _http.Response.BodyWriter;
            MessageFraming.Write(writer, message, _options.MaxSendMessageSize);
            var flush = await writer.FlushAsync(_callCts.Token).ConfigureAwait(false);
            if (flush.IsCanceled)
            {
                throw new OperationCanceledException(_callCts.Token);
            }
        }
        catch (Exception e) when (e is IOException or OperationCanceledException)
        {
            throw Cancelled(e);
        }
        finally
        {
            _writeLock.Release();
        }
    }

    public override async Task WriteResponseHeadersAsync(Metadata responseHeaders)
    {
        ArgumentNullException.ThrowIfNull(responseHeaders);
        await _writeLock.WaitAsync(CancellationToken.None).ConfigureAwait(false);
        try
        {
            ThrowIfCompleted();
            if (_http.Response.HasStarted)
            {
                throw new InvalidOperationException("Response headers are sent once per call, before the first message.");
            }

            StartResponse(responseHeaders);
            await _http.Response.StartAsync(_callCts.Token).ConfigureAwait(false);

            // Kestrel's StartAsync only queues the HEADERS frame; a flush sends it now.
            var flush = await _http.Response.BodyWriter.FlushAsync(_callCts.Token).ConfigureAwait(false);
            if (flush.IsCanceled)
            {
                throw new OperationCanceledException(_callCts.Token);
            }
        }
        catch (Exception e) when (e is IOException or OperationCanceledException)
        {
            throw Cancelled(e);
        }
        finally
        {
            _writeLock.Release();
        }
    }

    /// <summary>
    /// Ends the call with a status: in the trailers, or as a Trailers-Only response when nothing was
    /// sent yet. Only the first call has an effect; nothing is sent to a client that went away.
    /// </summary>
    public async Task FinishAsync(Status status, Metadata? trailers)
    {
        await _writeLock.WaitAsync(CancellationToken.None).ConfigureAwait(false);
        try
        {
            if (_completed)
            {
                return;
            }

            _completed = true;
            if (ClientCancelled)
            {
                return;
            }

            var response = _http.Response;
            if (!response.HasStarted)
            {
                // Trailers-Only: one HEADERS frame with END_STREAM carries the status.
                StartResponse(null);
                var headers = response.Headers;
                headers[GrpcProtocol.StatusHeader] = StatusText(status.StatusCode);
                if (status.Detail.Length > 0)
                {
                    headers[GrpcProtocol.MessageHeader] = PercentEncoding.Encode(status.Detail);
                }

                AppendAll(_responseTrailers, (k, v) => headers.Append(k, v));
                AppendAll(trailers, (k, v) => headers.Append(k, v));
            }
            else
            {
                response.AppendTrailer(GrpcProtocol.StatusHeader, StatusText(status.StatusCode));
                if (status.Detail.Length > 0)
                {
                    response.AppendTrailer(GrpcProtocol.MessageHeader, PercentEncoding.Encode(status.Detail));
                }

                AppendAll(_responseTrailers, (k, v) => response.AppendTrailer(k, v));
                AppendAll(trailers, (k, v) => response.AppendTrailer(k, v));
            }

            await response.CompleteAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or OperationCanceledException)
        {
            // The client went away while the status was being sent: there is no one to tell.
        }
        finally
        {
            _writeLock.Release();
        }
    }

    public void Dispose()
    {
        _deadlineRegistration.Dispose();
        _callCts.Dispose();
        _deadlineCts?.Dispose();
        _writeLock.Dispose();
    }

    private void StartResponse(Metadata? headers)
    {
        var response = _http.Response;
        if (response.HasStarted)
        {
            return;
        }

        response.StatusCode = StatusCodes.Status200OK;
        response.ContentType = GrpcProtocol.ContentType;
        AppendAll(headers, (k, v) => response.Headers.Append(k, v));
    }

    private void ThrowIfCompleted()
    {
        if (!_completed)
        {
            return;
        }

        if (DeadlineExceeded)
        {
            throw new RpcException(StatusCode.DeadlineExceeded, "The deadline passed; the call is over.");
        }

        throw ClientCancelled
            ? new OperationCanceledException("The client cancelled the call.", _callCts.Token)
            : new InvalidOperationException("The call is already complete.");
    }

    private OperationCanceledException Cancelled(Exception e) =>
        e as OperationCanceledException is { } oce && oce.CancellationToken == _callCts.Token
            ? oce
            : new OperationCanceledException(
                DeadlineExceeded ? "The deadline passed." : ClientCancelled ? "The client cancelled the call." : "The call was cancelled.",
                e,
                _callCts.Token);

    private Metadata ReadRequestHeaders()
    {
        var metadata = new Metadata();
        foreach (var (name, values) in _http.Request.Headers)
        {
            MetadataCodec.AddReceived(metadata, name, values);
        }

        return metadata;
    }

    private static void AppendAll(Metadata? metadata, Action<string, string> append)
    {
        if (metadata is null)
        {
            return;
        }

        foreach (var entry in metadata)
        {
            append(entry.Key, MetadataCodec.Encode(entry));
        }
    }

    private static string StatusText(StatusCode code) =>
        ((int)code).ToString(System.Globalization.CultureInfo.InvariantCulture);
}
