using System.Collections.Concurrent;
using System.Net.Sockets;
using System.Threading.Channels;
using Grpc.Core;
using V1 = Hyder.Api.V1;

namespace Hyder.Client;

/// <summary>
/// Runs a client's one-shot transactions over one shared <c>ExecuteStream</c> call
/// (<see cref="HyderClientSettings.Multiplex"/>): opened by the first transaction, opened again by
/// the first one after it broke. Each transaction gets an id; a send loop writes the requests
/// (buffering all but the last of a burst), a receive loop completes each transaction by the id of
/// its answer.
/// </summary>
/// <remarks>
/// When the stream breaks, a transaction that was never written goes to the next stream, and so
/// does one left unanswered by a server that sent its stop notice (id 0: it answers everything it
/// read and runs nothing more); one that was written and not answered otherwise fails: a read-only one is retried like a unary read on
/// UNAVAILABLE, a writing one throws <see cref="TransactionOutcomeUnknownException"/> (its commit
/// may have happened; it is never sent twice). A transaction whose caller cancels is abandoned
/// locally: the server may still run it and commit, and its answer is dropped.
/// </remarks>
internal sealed class ExecuteMultiplexer : IAsyncDisposable
{
    private readonly HyderClient _client;
    private readonly Lock _lock = new();
    private SharedCall? _stream;
    private long _nextId;
    private bool _disposed;

    public ExecuteMultiplexer(HyderClient client) => _client = client;

    /// <summary>Runs one transaction on the shared stream; the answer's <c>ExecuteResponse</c>.</summary>
    /// <param name="request">The transaction.</param>
    /// <param name="readOnly">Whether it only reads (then it is retried where a unary read would be).</param>
    /// <param name="cancellationToken">Abandons the transaction locally.</param>
    /// <returns>The server's answer.</returns>
    public async Task<V1.ExecuteResponse> ExecuteAsync(V1.ExecuteRequest request, bool readOnly, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        var timeout = _client.Settings.Timeout;
        var deadlineMs = timeout is { } t ? (uint)Math.Clamp(t.TotalMilliseconds, 1, uint.MaxValue) : 0u;
        for (var attempt = 0; ; attempt++)
        {
            var pending = new Pending(new V1.ExecuteStreamRequest
            {
                Id = (ulong)Interlocked.Increment(ref _nextId),
                Request = request,
                DeadlineMs = deadlineMs,
            });
            var stream = Current();
            if (!stream.TryQueue(pending))
            {
                // That stream broke before it took the transaction: the next one will.
                continue;
            }

            V1.ExecuteStreamResponse response;
            using (cancellationToken.CanBeCanceled ? cancellationToken.UnsafeRegister(static (state, token) => ((Pending)state!).Abandon(token), pending) : default)
            {
                try
                {
                    response = await pending.Task.ConfigureAwait(false);
                }
                catch (StreamBrokenException e)
                {
                    var failure = new RpcException(e.Status);
                    switch (e.Delivery)
                    {
                        case Delivery.NotSent when attempt < _client.Settings.MaxRetries:
                            // The stream broke before the transaction was written: the next one takes it.
                            if (attempt > 0)
                            {
                                await _client.BackoffAsync(attempt, cancellationToken).ConfigureAwait(false);
                            }

                            continue;
                        case Delivery.Sent when !readOnly && e.Status.StatusCode is not (StatusCode.Unauthenticated or StatusCode.PermissionDenied or StatusCode.Unimplemented):
                            throw new TransactionOutcomeUnknownException($"the stream to the server broke after the transaction was sent ({e.Status.StatusCode}: {e.Status.Detail})", e);
                        case Delivery.Unreachable or Delivery.Sent when readOnly && _client.Retryable(failure, attempt, cancellationToken):
                            await _client.BackoffAsync(attempt, cancellationToken).ConfigureAwait(false);
                            continue;
                        default:
                            throw Wire.Translate(failure, cancellationToken);
                    }
                }
            }

            if (response.ResultCase == V1.ExecuteStreamResponse.ResultOneofCase.Response)
            {
                return response.Response;
            }

            var error = new RpcException(new Status((StatusCode)response.Error.Code, response.Error.Message));
            if (readOnly && _client.Retryable(error, attempt, cancellationToken))
            {
                await _client.BackoffAsync(attempt, cancellationToken).ConfigureAwait(false);
                continue;
            }

            throw Wire.Translate(error, cancellationToken);
        }
    }

    /// <summary>Ends the shared stream: its request stream is ended, so the server ends the call once it has answered.</summary>
    /// <returns>A task that completes when the stream has ended (at most a few seconds).</returns>
    public async ValueTask DisposeAsync()
    {
        SharedCall? stream;
        lock (_lock)
        {
            _disposed = true;
            stream = _stream;
            _stream = null;
        }

        if (stream is not null)
        {
            await stream.CloseAsync().ConfigureAwait(false);
        }
    }

    /// <summary>The open stream, or a new one when there is none or it broke.</summary>
    private SharedCall Current()
    {
        var stream = Volatile.Read(ref _stream);
        if (stream is { Broken: false })
        {
            return stream;
        }

        lock (_lock)
        {
            ObjectDisposedException.ThrowIf(_disposed, this);
            if (_stream is null || _stream.Broken)
            {
                _stream = new SharedCall(_client);
            }

            return _stream;
        }
    }

    /// <summary>How far a transaction got before its stream broke.</summary>
    private enum Delivery
    {
        /// <summary>Still queued: never written to the stream.</summary>
        NotSent,

        /// <summary>The connection was never made: nothing reached a server.</summary>
        Unreachable,

        /// <summary>Written (or being written): the server may have run it.</summary>
        Sent,
    }

    /// <summary>The stream broke with the transaction in flight.</summary>
    /// <param name="status">The call's status.</param>
    /// <param name="delivery">How far the transaction got.</param>
    /// <param name="inner">The failure.</param>
    private sealed class StreamBrokenException(Status status, Delivery delivery, Exception? inner) : Exception(status.Detail, inner)
    {
        public Status Status { get; } = status;

        public Delivery Delivery { get; } = delivery;
    }

    /// <summary>
    /// One transaction waiting for its answer. Its request refers to the caller's arrays, which the
    /// caller may reuse once the task completes: a failure or cancellation that arrives while the
    /// request is being written completes the task only after the write.
    /// </summary>
    private sealed class Pending(V1.ExecuteStreamRequest request) : TaskCompletionSource<V1.ExecuteStreamResponse>(TaskCreationOptions.RunContinuationsAsynchronously)
    {
        private readonly Lock _lock = new();
        private bool _writing;
        private bool _written;
        private Exception? _deferred;
        private CancellationToken? _deferredCancel;

        public V1.ExecuteStreamRequest Request { get; } = request;

        /// <summary>The stream it was queued on (set before it is queued).</summary>
        public SharedCall? Call { get; set; }

        /// <summary>Claims the request for writing; false when the transaction has ended (abandoned) or was written already.</summary>
        public bool TryBeginWrite()
        {
            lock (_lock)
            {
                if (Task.IsCompleted || _writing || _written)
                {
                    return false;
                }

                _writing = true;
                return true;
            }
        }

        /// <summary>The request is written: a failure or cancellation held back meanwhile completes the task now.</summary>
        public void EndWrite()
        {
            Exception? failure;
            CancellationToken? cancel;
            lock (_lock)
            {
                _writing = false;
                _written = true;
                failure = _deferred;
                cancel = _deferredCancel;
            }

            if (cancel is { } token)
            {
                TrySetCanceled(token);
            }
            else if (failure is not null)
            {
                TrySetException(failure);
            }
        }

        public void Fail(Exception failure)
        {
            lock (_lock)
            {
                if (_writing)
                {
                    _deferred ??= failure;
                    return;
                }
            }

            TrySetException(failure);
        }

        public void Abandon(CancellationToken token)
        {
            Call?.Forget(this);
            lock (_lock)
            {
                if (_writing)
                {
                    _deferredCancel ??= token;
                    return;
                }
            }

            TrySetCanceled(token);
        }
    }

    /// <summary>One <c>ExecuteStream</c> call and the transactions on it.</summary>
    private sealed class SharedCall
    {
        /// <summary>The id of the server's stop notice (its transactions' ids start at 1).</summary>
        private const ulong StopNoticeId = 0;

        private static readonly WriteOptions s_buffered = new(WriteFlags.BufferHint);
        private static readonly Status s_stopping = new(StatusCode.Unavailable, "the server is stopping");

        private readonly AsyncDuplexStreamingCall<V1.ExecuteStreamRequest, V1.ExecuteStreamResponse> _call;
        private readonly Channel<Pending> _queue = Channel.CreateUnbounded<Pending>(new UnboundedChannelOptions { SingleReader = true });
        private readonly ConcurrentDictionary<ulong, Pending> _inFlight = new();
        private readonly Task _sending;
        private readonly Task _receiving;
        private volatile bool _broken;
        private volatile bool _stopNotice;
        private Status _failure;

        public SharedCall(HyderClient client)
        {
            _call = client.Stub.ExecuteStream(new CallOptions(client.Headers));
            _receiving = Task.Run(ReceiveAsync);
            _sending = Task.Run(SendAsync);
        }

        /// <summary>Whether the stream takes no more transactions: it failed, or its server is stopping.</summary>
        public bool Broken => _broken || _stopNotice;

        public bool TryQueue(Pending pending)
        {
            pending.Call = this;
            return !Broken && _queue.Writer.TryWrite(pending);
        }

        public void Forget(Pending pending) => _inFlight.TryRemove(pending.Request.Id, out _);

        /// <summary>Ends the request stream and waits (briefly) for the server to end the call; then cancels it.</summary>
        public async Task CloseAsync()
        {
            _queue.Writer.TryComplete();
            try
            {
                await _sending.WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
                await _receiving.WaitAsync(TimeSpan.FromSeconds(5)).ConfigureAwait(false);
            }
            catch (TimeoutException)
            {
            }

            Fail(new Status(StatusCode.Cancelled, "the client was disposed"), null);
        }

        private async Task SendAsync()
        {
            var queue = _queue.Reader;
            var requests = _call.RequestStream;
            try
            {
                // Nothing is written before the server's response headers, which it sends before
                // it reads anything: a call that fails to start (a refused connection, or one the
                // server closed that this client had not yet seen close) then carried no
                // transaction, and its queued ones run again on the next stream.
                await _call.ResponseHeadersAsync.ConfigureAwait(false);
                while (await queue.WaitToReadAsync().ConfigureAwait(false))
                {
                    while (queue.TryRead(out var pending))
                    {
                        var id = pending.Request.Id;
                        _inFlight[id] = pending;
                        if (Broken)
                        {
                            if (_inFlight.TryRemove(id, out _))
                            {
                                pending.Fail(new StreamBrokenException(_broken ? _failure : s_stopping, Delivery.NotSent, null));
                            }

                            continue;
                        }

                        if (!pending.TryBeginWrite())
                        {
                            // Abandoned by its caller before it was written.
                            _inFlight.TryRemove(id, out _);
                            continue;
                        }

                        requests.WriteOptions = queue.TryPeek(out _) ? s_buffered : null;
                        try
                        {
                            await requests.WriteAsync(pending.Request).ConfigureAwait(false);
                        }
                        finally
                        {
                            pending.EndWrite();
                        }
                    }
                }

                if (!_broken)
                {
                    await requests.CompleteAsync().ConfigureAwait(false);
                }
            }
            catch (Exception e)
            {
                // A write fails once the call has ended, often as CANCELLED; the server's own status
                // (UNAUTHENTICATED, say) reaches the receiving side, which fails the stream with it.
                // Give it a moment to, so that the transactions fail with the server's reason.
                await _receiving.WaitAsync(TimeSpan.FromSeconds(1)).ConfigureAwait(ConfigureAwaitOptions.SuppressThrowing);
                Fail(StatusOf(e), e);
            }

            // Fail (or the stop notice) has completed the queue: what is left in it was never written.
            // Where no connection was made at all, they fail as unreachable, as a unary call would.
            var unwritten = _broken && NeverConnected(_failure.DebugException) ? Delivery.Unreachable : Delivery.NotSent;
            while (queue.TryRead(out var pending))
            {
                pending.Fail(new StreamBrokenException(_broken ? _failure : s_stopping, unwritten, null));
            }
        }

        private async Task ReceiveAsync()
        {
            var answers = _call.ResponseStream;
            try
            {
                while (await answers.MoveNext(CancellationToken.None).ConfigureAwait(false))
                {
                    var answer = answers.Current;
                    if (answer.Id == StopNoticeId)
                    {
                        // The server stops: it answers everything it has read and runs nothing
                        // more, so what it does not answer was not run. No more requests go here.
                        _stopNotice = true;
                        _queue.Writer.TryComplete();
                    }
                    else if (_inFlight.TryRemove(answer.Id, out var pending))
                    {
                        pending.TrySetResult(answer);
                    }
                }

                Fail(new Status(StatusCode.Unavailable, "the server ended the stream"), null);
            }
            catch (Exception e)
            {
                Fail(StatusOf(e), e);
            }
        }

        /// <summary>Marks the stream broken and fails its transactions: the ones written as sent, the queued ones as not.</summary>
        private void Fail(Status status, Exception? e)
        {
            lock (_inFlight)
            {
                if (_broken)
                {
                    return;
                }

                _failure = status;
                _broken = true;
            }

            _queue.Writer.TryComplete();
            var delivery = _stopNotice && EndedByTheServer(e) ? Delivery.NotSent : NeverConnected(e) ? Delivery.Unreachable : Delivery.Sent;
            foreach (var id in _inFlight.Keys)
            {
                if (_inFlight.TryRemove(id, out var pending))
                {
                    pending.Fail(new StreamBrokenException(status, delivery, e));
                }
            }

            // Ends the HTTP/2 stream; the send loop then takes what is still queued and fails it as not sent.
            _call.Dispose();
        }

        private static Status StatusOf(Exception e) => e switch
        {
            RpcException rpc => new Status(Wire.StatusCodeOf(rpc), rpc.Status.Detail, rpc.Status.DebugException),
            OperationCanceledException => new Status(StatusCode.Cancelled, "the stream was cancelled"),
            _ => new Status(StatusCode.Unavailable, e.Message, e),
        };

        /// <summary>
        /// Whether the server ended the call with its own status (trailers, not a reset or a lost
        /// connection): after its stop notice, that status comes only once it has answered every
        /// request it read. A stop that aborts the calls (the shutdown timeout) resets them instead.
        /// </summary>
        private static bool EndedByTheServer(Exception? e) => e is RpcException { StatusCode: StatusCode.Unavailable, Status.DebugException: null };

        /// <summary>Whether the failure is a connection that was never made (refused, unreachable): then nothing reached a server.</summary>
        private static bool NeverConnected(Exception? e)
        {
            for (var inner = e; inner is not null; inner = inner is RpcException rpc ? rpc.Status.DebugException : inner.InnerException)
            {
                if (inner is HttpRequestException { HttpRequestError: HttpRequestError.ConnectionError } or SocketException { SocketErrorCode: SocketError.ConnectionRefused })
                {
                    return true;
                }
            }

            return false;
        }
    }
}
