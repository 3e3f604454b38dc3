using System.IO.Pipelines;
using System.Net;
using System.Net.Http.Headers;
using Google.Protobuf;

namespace Hyder.Rpc;

/// <summary>
/// One call on the client: sends the request over <see cref="HttpClient"/> (HTTP/2 only), reads
/// length-prefixed responses from the response stream, and takes the status from the trailers or,
/// for a Trailers-Only response, from the headers. The four public call types wrap it.
/// </summary>
internal sealed class ClientCall<TRequest, TResponse> : IAsyncStreamReader<TResponse>, IClientStreamWriter<TRequest>, IClientCallState
    where TRequest : class, IMessage<TRequest>
    where TResponse : class, IMessage<TResponse>
{
    private static readonly TimeSpan s_maxTimer = TimeSpan.FromDays(49);

    private readonly RpcChannel _channel;
    private readonly Method<TRequest, TResponse> _method;
    private readonly CallOptions _options;
    private readonly CancellationTokenSource _cts;
    private readonly CancellationTokenSource? _deadlineTimer;
    private readonly CancellationTokenRegistration _deadlineRegistration;
    private readonly RequestContent _content;
    private readonly HttpRequestMessage _request;
    private readonly TaskCompletionSource<Metadata> _headers = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly Task<HttpResponseMessage> _response;
    private readonly object _gate = new();
    private PipeReader? _reader;
    private Status? _status;
    private Metadata? _trailers;
    private TResponse? _current;
    private bool _requestCompleted;
    private bool _disposed;

    public ClientCall(RpcChannel channel, Method<TRequest, TResponse> method, CallOptions options, TRequest? request)
    {
        _channel = channel;
        _method = method;
        _options = options;
        _cts = CancellationTokenSource.CreateLinkedTokenSource(options.CancellationToken);
        _content = new RequestContent(request, channel.MaxSendMessageSize);
        _request = new HttpRequestMessage(HttpMethod.Post, new Uri(channel.Address, method.FullName))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            Content = _content,
        };

        var headers = _request.Headers;
        headers.TE.Add(new TransferCodingWithQualityHeaderValue("trailers"));
        headers.TryAddWithoutValidation("user-agent", RpcChannel.UserAgent);
        if (options.Deadline is { } deadline)
        {
            var remaining = deadline.ToUniversalTime() - DateTime.UtcNow;
            headers.TryAddWithoutValidation(GrpcProtocol.TimeoutHeader, GrpcTimeout.Format(remaining));
            if (remaining < s_maxTimer)
            {
                // Its own timer, so a failure can tell the deadline from a cancellation without reading the clock.
                _deadlineTimer = new CancellationTokenSource(remaining < TimeSpan.Zero ? TimeSpan.Zero : remaining);
                _deadlineRegistration = _deadlineTimer.Token.Register(static s => ((CancellationTokenSource)s!).Cancel(), _cts);
            }
        }

        var authorized = false;
        if (options.Headers is { } metadata)
        {
            foreach (var entry in metadata)
            {
                headers.TryAddWithoutValidation(entry.Key, MetadataCodec.Encode(entry));
                authorized |= entry.Key == Security.RpcAuthenticator.AuthorizationHeader;
            }
        }

        if (!authorized && channel.Authorization is { } authorization)
        {
            headers.TryAddWithoutValidation(Security.RpcAuthenticator.AuthorizationHeader, authorization);
        }

        if (request is not null && request.CalculateSize() > channel.MaxSendMessageSize)
        {
            var tooBig = new RpcException(StatusCode.ResourceExhausted, $"Sending message exceeds the maximum configured message size ({request.CalculateSize()} > {channel.MaxSendMessageSize} bytes).");
            _response = Task.FromException<HttpResponseMessage>(Fail(tooBig));
            return;
        }

        _response = SendAsync();
    }

    public Task<Metadata> ResponseHeadersAsync => _headers.Task;

    public TResponse Current => _current ?? throw new InvalidOperationException("MoveNext has not returned true.");

    public Status GetStatus() => _status ?? throw new InvalidOperationException("The call is not complete: its status is not known yet.");

    public Metadata GetTrailers() => _status is null
        ? throw new InvalidOperationException("The call is not complete: its trailers are not known yet.")
        : _trailers ?? new Metadata();

    public async Task<bool> MoveNext(CancellationToken cancellationToken = default)
    {
        using var registration = cancellationToken.Register(static s => ((CancellationTokenSource)s!).Cancel(), _cts);
        _current = await ReadNextAsync().ConfigureAwait(false);
        return _current is not null;
    }

    /// <summary>Reads the one response of a unary or client-streaming call, then its status.</summary>
    public async Task<TResponse> ReadSingleResponseAsync()
    {
        var response = await ReadNextAsync().ConfigureAwait(false)
            ?? throw Fail(new RpcException(StatusCode.Internal, "The server ended the call with OK but sent no response message."));
        if (await ReadNextAsync().ConfigureAwait(false) is not null)
        {
            throw Fail(new RpcException(StatusCode.Internal, "The server sent more than one response message for a method that returns one."));
        }

        return response;
    }

    public async Task WriteAsync(TRequest message)
    {
        ArgumentNullException.ThrowIfNull(message);
        if (_requestCompleted)
        {
            throw new InvalidOperationException("The request stream is already complete.");
        }

        ThrowIfFinished();
        try
        {
            await _content.WriteAsync(message, _cts.Token).ConfigureAwait(false);
        }
        catch (RpcException e) when (e.StatusCode == StatusCode.ResourceExhausted)
        {
            throw;
        }
        catch (Exception e)
        {
            ThrowIfFinished();
            throw Fail(Map(e));
        }
    }

    public Task CompleteAsync()
    {
        _requestCompleted = true;
        _content.Complete();
        return Task.CompletedTask;
    }

    public void Dispose()
    {
        lock (_gate)
        {
            if (_disposed)
            {
                return;
            }

            _disposed = true;
        }

        if (_status is null)
        {
            // Cancelling an unfinished call resets its HTTP/2 stream; the server sees CANCELLED.
            Fail(new RpcException(StatusCode.Cancelled, "The call was disposed before it completed."));
            _cts.Cancel();
        }

        _deadlineRegistration.Dispose();
        _deadlineTimer?.Dispose();
        _reader?.Complete();
        _request.Dispose();
        if (_response.IsCompletedSuccessfully)
        {
            _response.Result.Dispose();
        }

        _cts.Dispose();
    }

    private async Task<HttpResponseMessage> SendAsync()
    {
        HttpResponseMessage? response = null;
        try
        {
            response = await _channel.Http.SendAsync(_request, HttpCompletionOption.ResponseHeadersRead, _cts.Token).ConfigureAwait(false);
            var headers = ReadMetadata(response.Headers);
            if (response.StatusCode != HttpStatusCode.OK)
            {
                var grpcMessage = First(response.Headers, GrpcProtocol.MessageHeader);
                var detail = $"Bad gRPC response: HTTP status {(int)response.StatusCode}" + (grpcMessage is null ? "." : ": " + PercentEncoding.Decode(grpcMessage));
                throw new RpcException(new Status(GrpcProtocol.FromHttpStatus((int)response.StatusCode), detail), headers);
            }

            if (!GrpcProtocol.IsGrpcContentType(response.Content.Headers.ContentType?.MediaType))
            {
                throw new RpcException(StatusCode.Internal, $"Bad gRPC response: content-type '{response.Content.Headers.ContentType}'.");
            }

            if (First(response.Headers, GrpcProtocol.StatusHeader) is { } statusText)
            {
                // Trailers-Only: the headers are the trailers; there is no body.
                var status = new Status(GrpcProtocol.ParseStatus(statusText), DecodeMessage(response.Headers));
                Finish(status, headers);
            }

            _headers.TrySetResult(headers);
            return response;
        }
        catch (Exception e)
        {
            response?.Dispose();
            var failure = Fail(e as RpcException ?? Map(e));
            _headers.TrySetException(failure);
            throw failure;
        }
    }

    private async Task<TResponse?> ReadNextAsync()
    {
        var response = await _response.ConfigureAwait(false);
        if (_status is { } known)
        {
            return known.StatusCode == StatusCode.OK ? null : throw new RpcException(known, _trailers);
        }

        TResponse? message;
        try
        {
            _reader ??= PipeReader.Create(await response.Content.ReadAsStreamAsync(_cts.Token).ConfigureAwait(false));
            message = await MessageFraming.ReadAsync(_reader, _method.ResponseParser, _channel.MaxReceiveMessageSize, _cts.Token).ConfigureAwait(false);
        }
        catch (RpcException e)
        {
            // A framing violation decided here: cancel the stream so the server stops too.
            var failure = Fail(e);
            _cts.Cancel();
            throw failure;
        }
        catch (Exception e)
        {
            throw Fail(Map(e));
        }

        if (message is not null)
        {
            return message;
        }

        var trailing = response.TrailingHeaders;
        var trailers = ReadMetadata(trailing);
        var status = First(trailing, GrpcProtocol.StatusHeader) is { } text
            ? new Status(GrpcProtocol.ParseStatus(text), DecodeMessage(trailing))
            : new Status(StatusCode.Internal, "The response ended without a grpc-status trailer.");
        Finish(status, trailers);
        return status.StatusCode == StatusCode.OK ? null : throw new RpcException(status, trailers);
    }

    private void Finish(Status status, Metadata? trailers)
    {
        lock (_gate)
        {
            if (_status is not null)
            {
                return;
            }

            _status = status;
            _trailers = trailers;
        }

        _deadlineRegistration.Dispose(); // the deadline has nothing left to guard

        _content.Abort(new RpcException(status, trailers));
        _headers.TrySetResult(trailers ?? new Metadata());
    }

    /// <summary>Records a local failure as the call's status (unless one is known) and returns the exception to throw.</summary>
    private RpcException Fail(RpcException exception)
    {
        Finish(exception.Status, exception.Trailers);
        return _status is { } status && status != exception.Status ? new RpcException(status, _trailers) : exception;
    }

    private void ThrowIfFinished()
    {
        if (_status is { } status)
        {
            throw status.StatusCode == StatusCode.OK
                ? new InvalidOperationException("The call is complete; no more requests can be sent.")
                : new RpcException(status, _trailers);
        }
    }

    /// <summary>
    /// The deadline has passed: its timer fired (which may be a millisecond before the clock agrees),
    /// or the clock says so (the timer may run late on a loaded machine, and the server's reset or a
    /// broken connection may be noticed first).
    /// </summary>
    private bool DeadlinePassed =>
        _deadlineTimer?.IsCancellationRequested == true
        || (_deadlineTimer is not null && _options.Deadline is { } deadline && DateTime.UtcNow >= deadline.ToUniversalTime());

    /// <summary>The status for a transport failure: our deadline, our cancellation, or what the stream reset says.</summary>
    private RpcException Map(Exception e)
    {
        if (DeadlinePassed && !_options.CancellationToken.IsCancellationRequested)
        {
            // Once the deadline has passed, whatever ended the call, the deadline is why.
            return new RpcException(new Status(StatusCode.DeadlineExceeded, "Deadline exceeded."), null, e);
        }

        if (_cts.IsCancellationRequested || e is OperationCanceledException)
        {
            return new RpcException(new Status(StatusCode.Cancelled, "The call was cancelled."), null, e);
        }

        for (var inner = e; inner is not null; inner = inner.InnerException)
        {
            if (inner is HttpProtocolException protocol)
            {
                return new RpcException(new Status(GrpcProtocol.FromHttp2ErrorCode(protocol.ErrorCode), "The HTTP/2 stream was reset: " + protocol.Message), null, e);
            }
        }

        return new RpcException(new Status(StatusCode.Unavailable, "Error talking to the server: " + e.Message), null, e);
    }

    private static Metadata ReadMetadata(HttpHeaders headers)
    {
        var metadata = new Metadata();
        foreach (var (name, values) in headers.NonValidated)
        {
            MetadataCodec.AddReceived(metadata, name, new Microsoft.Extensions.Primitives.StringValues([.. values]));
        }

        return metadata;
    }

    private static string? First(HttpHeaders headers, string name) =>
        headers.NonValidated.TryGetValues(name, out var values) && values.Count > 0 ? values.First() : null;

    private static string DecodeMessage(HttpHeaders headers) =>
        First(headers, GrpcProtocol.MessageHeader) is { } text ? PercentEncoding.Decode(text) : string.Empty;
}

/// <summary>The part of a client call the public call types share.</summary>
internal interface IClientCallState : IDisposable
{
    Task<Metadata> ResponseHeadersAsync { get; }

    Status GetStatus();

    Metadata GetTrailers();
}
