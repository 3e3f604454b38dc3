using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using System.Threading.Channels;
using Grpc.Core;
using Hyder.Security;
using Hyder.Server.Engine;
using Microsoft.Extensions.Logging;
using V1 = Hyder.Api.V1;
using TreeIsolation = Hyder.Tree.IsolationLevel;

namespace Hyder.Server.Grpc;

/// <summary>
/// One <c>ExecuteStream</c> call: one-shot transactions multiplexed on a long-lived stream, so the
/// per-call costs of HTTP/2 and Grpc.AspNetCore (a stream, its headers, an HttpContext, a
/// ServerCallContext, a deadline timer) are paid once per stream instead of once per transaction.
/// </summary>
/// <remarks>
/// <para>
/// The reader takes a free <see cref="Slot"/> (at most <see cref="HyderService.MaxTransactionsPerStream"/>
/// exist; with none free it stops reading, and HTTP/2 flow control holds the client back), reads
/// the next request into it and starts the transaction. A slot whose transaction completes queues
/// itself for the writer, which writes the answers in completion order, buffering all but the last
/// of those waiting (one flush for a burst of answers, at most <see cref="MaxAnswersPerFlush"/>),
/// and frees each slot once written. Each slot reuses its response messages and its cancellation
/// source, so a transaction allocates what the engine needs and the results' wrappers, not a call.
/// </para>
/// <para>
/// A request that fails its checks is answered with a <c>TransactionError</c> for its id; the
/// stream goes on. The call ends with OK once the client has ended its request stream and every
/// transaction read is answered; with UNAVAILABLE once the host starts stopping (a stop notice, id
/// 0 with UNAVAILABLE, asks the client to end its requests; requests read after it are refused
/// unrun; every request without an answer was not run; see <see cref="OnStopping"/>); and with
/// the connection (its cancellation cancels the transactions in flight).
/// </para>
/// </remarks>
internal sealed partial class ExecuteStreamCall
{
    private static readonly WriteOptions s_buffered = new(WriteFlags.BufferHint);

    /// <summary>
    /// Answers written without a flush at most, before one that flushes: a buffered write never
    /// waits for HTTP/2 flow control, so without this bound a steady run of answers to a client
    /// that stopped reading would all go into the response buffer, free their slots and let the
    /// reader take more requests without end. The flush waits for the client's window.
    /// </summary>
    internal const int MaxAnswersPerFlush = 16;

    private readonly HyderService _service;
    private readonly CallerIdentity _caller;
    private readonly IServerStreamWriter<V1.ExecuteStreamResponse> _responses;
    private readonly CancellationTokenSource _abort;
    private readonly Slot?[] _slots;
    private readonly Channel<Slot> _free = Channel.CreateUnbounded<Slot>(new UnboundedChannelOptions { SingleReader = true });
    private readonly Channel<Slot> _answered = Channel.CreateUnbounded<Slot>(new UnboundedChannelOptions { SingleReader = true });
    private const string StoppingMessage = "The server is stopping: every transaction it read is answered; the ones without an answer were not run. Retry them on another server or after the restart.";

    /// <summary>How long a stopping server waits for the client to end its requests after the stop notice.</summary>
    private static readonly TimeSpan s_stopGrace = TimeSpan.FromSeconds(2);

    private int _created;
    private Exception? _writeFailure;
    private bool _stopping;
    private Slot? _notice;

    public ExecuteStreamCall(HyderService service, CallerIdentity caller, IServerStreamWriter<V1.ExecuteStreamResponse> responses, CancellationToken callToken)
    {
        _service = service;
        _caller = caller;
        _responses = responses;
        _abort = CancellationTokenSource.CreateLinkedTokenSource(callToken);
        _slots = new Slot?[Math.Max(1, service.MaxTransactionsPerStream)];
    }

    /// <summary>Set when the call fails (the connection, a failed write): the transactions in flight are cancelled and nothing more is read.</summary>
    private CancellationToken AbortToken => _abort.Token;

    /// <summary>Reads and runs the stream's transactions until the client ends its requests, the host stops or the call fails.</summary>
    /// <param name="requests">The client's requests.</param>
    /// <param name="stopping">The host's stopping token.</param>
    /// <returns>A task that completes when every transaction read is answered.</returns>
    public async Task RunAsync(IAsyncStreamReader<V1.ExecuteStreamRequest> requests, CancellationToken stopping)
    {
        try
        {
            await RunCoreAsync(requests, stopping).ConfigureAwait(false);
        }
        finally
        {
            _abort.Dispose();
        }
    }

    private async Task RunCoreAsync(IAsyncStreamReader<V1.ExecuteStreamRequest> requests, CancellationToken stopping)
    {
        using var cancelAll = _abort.Token.UnsafeRegister(static state => ((ExecuteStreamCall)state!).CancelAll(), this);
        using var stopWait = new CancellationTokenSource();
        using var reading = CancellationTokenSource.CreateLinkedTokenSource(_abort.Token, stopWait.Token);
        var writer = WriteAnswersAsync();
        using var onStop = stopping.UnsafeRegister(static state => ((ExecuteStreamCall)((object[])state!)[0]).OnStopping((CancellationTokenSource)((object[])state!)[1]), new object[] { this, stopWait });
        Exception? endWith = null;
        Slot? held = null;
        try
        {
            while (true)
            {
                held = await TakeFreeAsync(reading.Token).ConfigureAwait(false);
                if (!await requests.MoveNext(reading.Token).ConfigureAwait(false))
                {
                    break;
                }

                var slot = held;
                held = null;
                if (Volatile.Read(ref _stopping))
                {
                    slot.Refuse(requests.Current.Id, StatusCode.Unavailable, "The server is stopping; the transaction was not run. Retry it on another server or after the restart.");
                }
                else
                {
                    slot.Start(requests.Current);
                }
            }
        }
        catch (Exception) when (Volatile.Read(ref _stopping) && !_abort.IsCancellationRequested)
        {
            // The client did not end its requests within the stop's grace.
        }
        catch (Exception e) when (!_abort.IsCancellationRequested)
        {
            // A request the stream could not deliver (over the message limit, malformed): the
            // transactions read before it are still answered, then the call ends with its status.
            endWith = e;
        }
        catch (Exception) when (_abort.IsCancellationRequested)
        {
            // The call failed: nothing more can be answered.
        }

        if (Volatile.Read(ref _stopping) && endWith is null)
        {
            endWith = new RpcException(new Status(StatusCode.Unavailable, StoppingMessage));
        }

        if (held is not null)
        {
            _free.Writer.TryWrite(held);
        }

        if (!_abort.IsCancellationRequested)
        {
            try
            {
                // Every transaction read is answered before the call ends: take every slot back.
                for (var i = 0; i < _created; i++)
                {
                    await _free.Reader.ReadAsync(_abort.Token).ConfigureAwait(false);
                }
            }
            catch (OperationCanceledException) when (_abort.IsCancellationRequested)
            {
            }
        }

        _answered.Writer.TryComplete();
        await writer.ConfigureAwait(false);

        // Answers the failed writer left behind release what they lent.
        while (_answered.Reader.TryRead(out var unwritten))
        {
            unwritten.Clear();
        }

        if (_writeFailure is { } failure)
        {
            ExceptionDispatchInfo.Throw(failure);
        }

        _abort.Token.ThrowIfCancellationRequested();
        foreach (var slot in _slots)
        {
            slot?.Dispose();
        }

        if (endWith is not null)
        {
            ExceptionDispatchInfo.Throw(endWith);
        }
    }

    /// <summary>A free slot: a new one while fewer than the limit exist, else the next one the writer frees.</summary>
    private ValueTask<Slot> TakeFreeAsync(CancellationToken cancellationToken)
    {
        if (_free.Reader.TryRead(out var slot))
        {
            return new ValueTask<Slot>(slot);
        }

        if (_created < _slots.Length)
        {
            slot = new Slot(this);
            Volatile.Write(ref _slots[_created], slot);
            _created++;
            return new ValueTask<Slot>(slot);
        }

        return _free.Reader.ReadAsync(cancellationToken);
    }

    /// <summary>Writes answers as slots complete: all but the last of a burst buffered, the last flushed.</summary>
    private async Task WriteAnswersAsync()
    {
        var answered = _answered.Reader;

        // Taken from the queue and not yet written: what a failed write leaves behind.
        Slot? writing = null;
        Slot? following = null;
        try
        {
            while (await answered.WaitToReadAsync().ConfigureAwait(false))
            {
                if (!answered.TryRead(out var slot))
                {
                    continue;
                }

                writing = slot;
                var buffered = 0;
                while (buffered < MaxAnswersPerFlush && answered.TryRead(out var next))
                {
                    buffered++;
                    following = next;
                    _responses.WriteOptions = s_buffered;
                    await _responses.WriteAsync(slot.Response).ConfigureAwait(false);
                    Free(slot);
                    slot = writing = next;
                    following = null;
                }

                _responses.WriteOptions = null;
                await _responses.WriteAsync(slot.Response).ConfigureAwait(false);
                Free(slot);
                writing = null;
            }
        }
        catch (Exception e)
        {
            // Their answers will never be written: they release what they lent.
            writing?.Clear();
            following?.Clear();
            // The call is broken (or cancelled): nothing more can be answered.
            _writeFailure = _abort.IsCancellationRequested ? null : e;
            await _abort.CancelAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// The host starts stopping: the stop notice (id 0, UNAVAILABLE) goes out behind the answers
    /// ready, so the client sends no more and ends its requests; requests read from now on are
    /// refused unrun. The call ends once the client has ended its requests (which lets the status
    /// reach it: a call that ends with its request stream open is reset), or after a short grace.
    /// </summary>
    private void OnStopping(CancellationTokenSource stopWait)
    {
        var notice = new Slot(this);
        notice.SetError(StatusCode.Unavailable, StoppingMessage);
        _notice = notice;
        Volatile.Write(ref _stopping, true);
        _answered.Writer.TryWrite(notice);
        try
        {
            stopWait.CancelAfter(s_stopGrace);
        }
        catch (ObjectDisposedException)
        {
            // The call has ended.
        }
    }

    private void Free(Slot slot)
    {
        if (slot == _notice)
        {
            return;
        }

        slot.Clear();
        _free.Writer.TryWrite(slot);
    }

    /// <summary>Cancels the transactions in flight (the call failed).</summary>
    private void CancelAll()
    {
        for (var i = 0; i < _slots.Length; i++)
        {
            Volatile.Read(ref _slots[i])?.Cancel();
        }
    }

    private void Answered(Slot slot)
    {
        if (!_answered.Writer.TryWrite(slot))
        {
            // The call has ended: the answer has nowhere to go.
            slot.Clear();
        }
    }

    [LoggerMessage(10, LogLevel.Error, "ExecuteStream transaction failed unexpectedly")]
    private static partial void LogUnexpected(ILogger logger, Exception exception);

    /// <summary>One transaction in flight on the stream, with the messages and cancellation source it reuses.</summary>
    private sealed class Slot : IDisposable
    {
        private readonly ExecuteStreamCall _call;
        private readonly V1.ExecuteResponse _execute = new() { Outcome = new V1.Outcome() };
        private readonly V1.TransactionError _error = new();
        private readonly List<V1.OperationResult> _results = [];
        private readonly Action _completed;
        private CancellationTokenSource? _cancellation;
        private ConfiguredValueTaskAwaitable<TransactionOutcome>.ConfiguredValueTaskAwaiter _awaiter;

        /// <summary>The outcome answered, whose lent values the response wraps until it is written.</summary>
        private TransactionOutcome? _lent;

        public Slot(ExecuteStreamCall call)
        {
            _call = call;
            _completed = Completed;
        }

        /// <summary>The answer, once the slot is queued for the writer.</summary>
        public V1.ExecuteStreamResponse Response { get; } = new();

        /// <summary>Checks the request and starts its transaction; a refusal is answered at once.</summary>
        public void Start(V1.ExecuteStreamRequest message)
        {
            Response.Id = message.Id;
            try
            {
                var service = _call._service;
                var request = message.Request ?? throw Messages.Invalid("request is missing");
                var (isolation, operations) = service.CheckOneShot(_call._caller, request);
                var token = Token(message.DeadlineMs);
                var melded = service.MeldedAtLeastAsync(request.MinOrdinal, token);
                if (!melded.IsCompletedSuccessfully)
                {
                    _ = RunAfterAsync(melded, isolation, operations, token);
                    return;
                }

                melded.GetAwaiter().GetResult();
                Run(service.Engine.ExecuteAsync(isolation, operations, token));
            }
            catch (Exception e)
            {
                Fail(e);
                _call.Answered(this);
            }
        }

        /// <summary>Answers a request with an error without running it.</summary>
        public void Refuse(ulong id, StatusCode code, string message)
        {
            Response.Id = id;
            SetError(code, message);
            _call.Answered(this);
        }

        /// <summary>Cancels the transaction in flight, if any.</summary>
        public void Cancel()
        {
            try
            {
                Volatile.Read(ref _cancellation)?.Cancel();
            }
            catch (ObjectDisposedException)
            {
                // The call has ended.
            }
        }

        /// <summary>Drops the answer (and its references to the engine's arrays) once it is written, and releases the outcome's lease on them.</summary>
        public void Clear()
        {
            foreach (var result in _execute.Results)
            {
                Messages.Clear(result);
            }

            _execute.Results.Clear();
            Response.Response = null;
            Interlocked.Exchange(ref _lent, null)?.Dispose();
        }

        public void Dispose()
        {
            Interlocked.Exchange(ref _lent, null)?.Dispose();
            _cancellation?.Dispose();
        }

        /// <summary>The transaction's token: the slot's source, reset, with the request's deadline.</summary>
        private CancellationToken Token(uint deadlineMs)
        {
            var cancellation = _cancellation;
            if (cancellation is null || !cancellation.TryReset())
            {
                cancellation?.Dispose();
                cancellation = new CancellationTokenSource();
                Volatile.Write(ref _cancellation, cancellation);
            }

            if (deadlineMs > 0)
            {
                cancellation.CancelAfter(TimeSpan.FromMilliseconds(deadlineMs));
            }

            if (_call.AbortToken.IsCancellationRequested)
            {
                cancellation.Cancel();
            }

            return cancellation.Token;
        }

        private async Task RunAfterAsync(ValueTask melded, TreeIsolation isolation, IReadOnlyList<Operation> operations, CancellationToken token)
        {
            try
            {
                await melded.ConfigureAwait(false);
            }
            catch (Exception e)
            {
                Fail(e);
                _call.Answered(this);
                return;
            }

            Run(_call._service.Engine.ExecuteAsync(isolation, operations, token));
        }

        private void Run(ValueTask<TransactionOutcome> execution)
        {
            _awaiter = execution.ConfigureAwait(false).GetAwaiter();
            if (_awaiter.IsCompleted)
            {
                Completed();
            }
            else
            {
                _awaiter.UnsafeOnCompleted(_completed);
            }
        }

        private void Completed()
        {
            var awaiter = _awaiter;
            _awaiter = default;
            try
            {
                Answer(awaiter.GetResult());
            }
            catch (Exception e)
            {
                Fail(e);
            }

            _call.Answered(this);
        }

        private void Answer(TransactionOutcome outcome)
        {
            if (outcome.Status != TransactionStatus.Committed)
            {
                // Only a commit's results are sent.
                outcome.Dispose();
            }
            else
            {
                _lent = outcome;
            }

            var execute = _execute;
            Messages.Fill(execute.Outcome, outcome);
            var bytes = 0;
            if (outcome.Status == TransactionStatus.Committed)
            {
                var results = outcome.Results;
                for (var i = 0; i < results.Count; i++)
                {
                    if (i == _results.Count)
                    {
                        _results.Add(new V1.OperationResult());
                    }

                    var message = _results[i];
                    bytes += Messages.Fill(message, results[i]) + 16;
                    execute.Results.Add(message);
                }
            }

            Response.Response = execute;

            // Grpc.AspNetCore would fail the whole call on an answer over the message limit: refuse
            // this transaction's answer instead, as the unary Execute refuses its call.
            var limit = _call._service.Limits.MaxMessageBytes;
            if (bytes > limit / 2 && Response.CalculateSize() is var size && size > limit)
            {
                Clear();
                SetError(StatusCode.ResourceExhausted, $"the answer is {size} bytes, over the message limit of {limit}; page large reads with Scan");
            }
        }

        private void Fail(Exception e)
        {
            var (code, message) = e switch
            {
                EngineException engine => (HyderInterceptor.ToStatusCode(engine.Code), engine.Message),
                RpcException rpc => (rpc.StatusCode, rpc.Status.Detail),
                OperationCanceledException when _call.AbortToken.IsCancellationRequested => (StatusCode.Cancelled, "the call was cancelled"),
                OperationCanceledException when _cancellation?.IsCancellationRequested == true => (StatusCode.DeadlineExceeded, "the transaction's deadline passed"),
                _ => (StatusCode.Internal, "internal error"),
            };
            if (code == StatusCode.Internal && e is not EngineException)
            {
                LogUnexpected(_call._service.Logger, e);
            }

            Clear();
            SetError(code, message);
        }

        public void SetError(StatusCode code, string message)
        {
            _error.Code = (int)code;
            _error.Message = message;
            Response.Error = _error;
        }
    }
}
