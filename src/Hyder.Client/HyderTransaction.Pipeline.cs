using System.Threading.Tasks.Sources;
using Grpc.Core;
using V1 = Hyder.Api.V1;

namespace Hyder.Client;

/// <summary>
/// The pipeline: requests wait in call order for the one writer, and one reader completes the
/// pending requests in the same order from the server's answers.
/// </summary>
/// <remarks>
/// Invariants (under <see cref="_gate"/>): every request is in <see cref="_awaiting"/> from the call
/// that issues it until its answer or the failure; <see cref="_unwritten"/> is the tail of
/// <see cref="_awaiting"/> not yet handed to the writer, in the same order; at most one writer
/// (<see cref="_writing"/>) and one reader run. The first failure (<see cref="_failure"/>) fails
/// every pending request and stops both.
/// </remarks>
public sealed partial class HyderTransaction
{
    private static readonly Action<object?> s_cancel = static state =>
        ThreadPool.UnsafeQueueUserWorkItem(static t => t.CancelCall(), (HyderTransaction)state!, preferLocal: false);

    private readonly Lock _gate = new();
    private readonly Queue<Pending> _awaiting = new();
    private readonly Queue<Pending> _unwritten = new();
    private readonly Stack<Pending> _free = new();
    private readonly CancellationTokenSource _readCancel = new();
    private bool _writing;

    /// <summary>Open <see cref="Batch"/> scopes: while any is open, queued requests wait for the writer.</summary>
    private int _holds;
    private bool _ending;
    private Exception? _failure;
    private bool _failureReported;
    private Task? _reader;

    /// <summary>True once the writer ended the request stream after a commit or an abort.</summary>
    private bool _requestsEnded;

    /// <summary>
    /// A pipelined transaction (<see cref="HyderClient.BeginPipelined"/>): its call came from the
    /// client's idle calls or is new, has no deadline, and goes back to the client after a clean
    /// outcome instead of ending (the server then waits for the next begin on it).
    /// </summary>
    private readonly bool _pooled;

    /// <summary>The call carried an earlier transaction.</summary>
    private bool _reused;

    /// <summary>The call went back to the client: this transaction no longer owns it.</summary>
    private bool _callReturned;

    /// <summary>Completed when the writer stops (<see cref="WriterIdleAsync"/>); null while nobody waits.</summary>
    private TaskCompletionSource? _writerIdle;

    /// <summary>The transaction cancelled its own call (a failure or a caller's cancellation), not its deadline.</summary>
    private bool _cancelled;

    /// <summary>Queues a request, starts the writer if none runs, and returns the wait for its answer.</summary>
    private ValueTask<V1.TransactResponse> SendAsync(V1.TransactRequest request, V1.TransactResponse.ResponseOneofCase expected, CancellationToken cancellationToken, bool ends = false)
    {
        Pending pending;
        bool write;
        lock (_gate)
        {
            if (_state != State.Active)
            {
                if (_failure is { } failure && !_failureReported)
                {
                    // The stream failed while nothing was pending: the first call after learns why.
                    _failureReported = true;
                    return ValueTask.FromException<V1.TransactResponse>(Describe(failure, cancellationToken));
                }

                return ValueTask.FromException<V1.TransactResponse>(new InvalidOperationException($"The transaction is {_state.ToString().ToLowerInvariant()}."));
            }

            if (_ending)
            {
                return ValueTask.FromException<V1.TransactResponse>(new InvalidOperationException("The transaction's commit or abort is under way."));
            }

            _ending = ends;
            pending = _free.TryPop(out var free) ? free : new Pending(this);
            pending.Request = request;
            pending.Expected = expected;
            pending.Token = cancellationToken;
            _awaiting.Enqueue(pending);
            _unwritten.Enqueue(pending);
            write = !_writing && _holds == 0;
            _writing |= write;
        }

        if (cancellationToken.CanBeCanceled)
        {
            // Cancelling one pending operation ends the call, as cancelling the only one does.
            pending.Registration = cancellationToken.UnsafeRegister(s_cancel, this);
        }

        var wait = new ValueTask<V1.TransactResponse>(pending, pending.Version);
        if (write)
        {
            _ = WriteRequestsAsync();
        }

        return wait;
    }

    /// <summary>
    /// Holds this transaction's requests back until the returned scope is disposed, then sends them
    /// together: with <see cref="HyderClientSettings.BatchOperations"/> (the default) as one
    /// <c>batch</c> message of the <c>Transact</c> stream (several, past half the message limit),
    /// answered the same way. Issue the operations inside the scope without awaiting them, and
    /// await them after it: an operation awaited inside the scope never completes, because it has
    /// not been sent. Scopes nest; the outermost one's end sends.
    /// </summary>
    /// <example>
    /// <code>
    /// Task&lt;byte[]?&gt;[] reads;
    /// using (transaction.Batch())
    /// {
    ///     reads = keys.Select(k => transaction.GetAsync(k)).ToArray();
    /// }
    ///
    /// var values = await Task.WhenAll(reads);
    /// </code>
    /// </example>
    /// <returns>The scope; dispose it (a <c>using</c> block) to send.</returns>
    public BatchScope Batch()
    {
        lock (_gate)
        {
            _holds++;
        }

        return new BatchScope(this);
    }

    /// <summary>
    /// Queues a pipelined begin (<see cref="HyderClient.BeginPipelined"/>) without starting the
    /// writer: it leaves with the first request issued after it. Nobody awaits its answer; the
    /// reader takes the snapshot sequence from it, and a failure reaches the requests behind it.
    /// </summary>
    private void QueueBegin(V1.TransactRequest begin)
    {
        lock (_gate)
        {
            var pending = new Pending(this) { Request = begin, Expected = V1.TransactResponse.ResponseOneofCase.Begun, Unawaited = true };
            _awaiting.Enqueue(pending);
            _unwritten.Enqueue(pending);
        }
    }

    /// <summary>Ends one <see cref="Batch"/> scope; the last one's end starts the writer for what it held.</summary>
    private void Release()
    {
        bool write;
        lock (_gate)
        {
            if (_holds == 0)
            {
                return;
            }

            _holds--;
            write = _holds == 0 && !_writing && _unwritten.Count > 0 && _failure is null;
            _writing |= write;
        }

        if (write)
        {
            _ = WriteRequestsAsync();
        }
    }

    /// <summary>
    /// Writes queued requests in order until none is left; a failure stops the pipeline. With
    /// <see cref="HyderClientSettings.BatchOperations"/>, requests queued together go out as one
    /// <c>batch</c> message (up to half the message limit).
    /// </summary>
    /// <remarks>
    /// What is queued together: the requests issued inside a <see cref="Batch"/> scope (the writer
    /// waits for its end), and those issued while an earlier write was under way. They leave in one
    /// message and come back in one, instead of one round of framing, dispatch and wake-ups per
    /// operation on both sides (docs/benchmarks/rpc.md, "Batches, the pipelined begin and kept calls").
    /// </remarks>
    private async Task WriteRequestsAsync()
    {
        var batching = _client.Settings.BatchOperations;
        var budget = Math.Max(1, _client.Settings.MaxMessageBytes / 2);
        while (true)
        {
            V1.TransactRequest? request;
            var last = V1.TransactRequest.RequestOneofCase.None;
            TaskCompletionSource? idle = null;
            lock (_gate)
            {
                request = _failure is null && _holds == 0 && _unwritten.TryDequeue(out var next) ? Take(next) : null;
                if (request is null)
                {
                    idle = StopWriting();
                }
                else
                {
                    last = request.RequestCase;
                    if (batching && _unwritten.Count > 0)
                    {
                        request = Gather(request, budget, ref last);
                    }
                }
            }

            if (request is null)
            {
                idle?.TrySetResult();
                return;
            }

            try
            {
                await _call.RequestStream.WriteAsync(request).ConfigureAwait(false);
                if (!_pooled && last is V1.TransactRequest.RequestOneofCase.Commit or V1.TransactRequest.RequestOneofCase.Abort)
                {
                    // Nothing follows a commit or an abort: the request stream ends with it, so the
                    // server, which waits for that end after the outcome, ends the call at once.
                    await _call.RequestStream.CompleteAsync().ConfigureAwait(false);
                    Volatile.Write(ref _requestsEnded, true);
                }
            }
            catch (Exception e) when (e is RpcException or InvalidOperationException or OperationCanceledException or IOException)
            {
                TaskCompletionSource? stopped;
                lock (_gate)
                {
                    stopped = StopWriting();
                }

                stopped?.TrySetResult();

                if (e is RpcException { StatusCode: StatusCode.Cancelled })
                {
                    // The call has ended (the server refused a request, or a pending operation was
                    // cancelled); the reader reads the call's own status, which says why.
                    return;
                }

                Fail(e);
                CancelCall();
                return;
            }
        }
    }

    /// <summary>
    /// <paramref name="first"/> and the requests queued behind it, up to <paramref name="budget"/>
    /// bytes, as one batch (under <see cref="_gate"/>); <paramref name="last"/> becomes the kind of
    /// the last one taken. Only <paramref name="first"/> when the next does not fit.
    /// </summary>
    private V1.TransactRequest Gather(V1.TransactRequest first, int budget, ref V1.TransactRequest.RequestOneofCase last)
    {
        var bytes = first.CalculateSize();
        var batch = new V1.TransactRequestBatch { Requests = { first } };
        while (_unwritten.TryPeek(out var more))
        {
            var size = more.Request!.CalculateSize();
            if (bytes + size > budget)
            {
                break;
            }

            bytes += size;
            var taken = Take(_unwritten.Dequeue());
            batch.Requests.Add(taken);
            last = taken.RequestCase;
        }

        return batch.Requests.Count > 1 ? new V1.TransactRequest { Batch = batch } : first;
    }

    /// <summary>
    /// A wait for the writer to stop (none: it is not running): no write of this transaction is in
    /// progress once it completes. It cannot miss a writer that is still being started (whose task
    /// is not yet anybody's): <see cref="_writing"/> is set under the gate before the writer runs.
    /// </summary>
    private Task WriterIdleAsync()
    {
        lock (_gate)
        {
            if (!_writing)
            {
                return Task.CompletedTask;
            }

            _writerIdle ??= new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            return _writerIdle.Task;
        }
    }

    /// <summary>
    /// The writer stops (under <see cref="_gate"/>): clears <see cref="_writing"/> and returns the
    /// wait of <see cref="WriterIdleAsync"/> to complete, if anybody waits, outside the gate.
    /// </summary>
    private TaskCompletionSource? StopWriting()
    {
        _writing = false;
        var idle = _writerIdle;
        _writerIdle = null;
        return idle;
    }

    /// <summary>The request of a pending one that leaves for the writer (under <see cref="_gate"/>).</summary>
    private static V1.TransactRequest Take(Pending pending)
    {
        var request = pending.Request!;
        pending.Request = null;
        return request;
    }

    /// <summary>Reads answers until the outcome, completing pending requests in order.</summary>
    private async Task ReadResponsesAsync()
    {
        try
        {
            while (await _call.ResponseStream.MoveNext(_readCancel.Token).ConfigureAwait(false))
            {
                var response = _call.ResponseStream.Current;
                if (response.ResponseCase != V1.TransactResponse.ResponseOneofCase.Batch)
                {
                    if (Complete(response))
                    {
                        return;
                    }

                    continue;
                }

                foreach (var answer in response.Batch.Responses)
                {
                    if (Complete(answer))
                    {
                        return;
                    }
                }
            }

            Fail(EndedWithoutAnswer());
        }
        catch (Exception e) when (e is RpcException or OperationCanceledException or InvalidOperationException or IOException)
        {
            Fail(_pooled && _readCancel.IsCancellationRequested && !Volatile.Read(ref _cancelled)
                ? new HyderException(StatusCode.DeadlineExceeded, $"The transaction ran past its deadline ({_client.Settings.Timeout?.TotalSeconds:0.###} s); the server aborts it.", e)
                : e);
        }
    }

    /// <summary>
    /// The failure when the server ended the call without answering what was due. When nothing was
    /// answered at all and the begin was due, nothing ran: a server that stops ends the calls that
    /// wait between transactions, which a reused call then meets.
    /// </summary>
    private HyderException EndedWithoutAnswer()
    {
        bool beginDue;
        lock (_gate)
        {
            beginDue = _awaiting.TryPeek(out var first) && first.Unawaited;
        }

        return beginDue
            ? new HyderException(StatusCode.Unavailable, $"The server ended the transaction's {(_reused ? "reused " : string.Empty)}stream before it began (it is stopping, or the stream sat idle past its wait); nothing was applied, and the transaction may run again.")
            : new HyderException(StatusCode.Internal, "The server ended the transaction without an answer.");
    }

    /// <summary>
    /// Completes the oldest pending request with its answer; true when reading ends (the outcome
    /// came, or the answer was not the one due and the call is failed).
    /// </summary>
    private bool Complete(V1.TransactResponse response)
    {
        Pending? pending;
        lock (_gate)
        {
            _awaiting.TryDequeue(out pending);
        }

        if (pending is null || response.ResponseCase != pending.Expected)
        {
            var due = pending is null ? "nothing" : pending.Expected.ToString();
            Fail(new HyderException(StatusCode.Internal, $"The server answered {response.ResponseCase} where {due} was due."), pending);
            CancelCall();
            return true;
        }

        if (pending.Unawaited)
        {
            // A pipelined begin's answer: the requests behind it are what the caller awaits.
            SnapshotSequence = response.Begun.SnapshotSequence;
            _client.Session.Observe(SnapshotSequence);
            return false;
        }

        // After SetResult the pending request may already be reused: it is the last touch.
        // The outcome is the last answer: the stream is left to FinishAsync.
        var last = response.ResponseCase == V1.TransactResponse.ResponseOneofCase.Outcome;
        pending.SetResult(response);
        return last;
    }

    /// <summary>Records the first failure and fails every pending request (and <paramref name="dequeued"/>) with it.</summary>
    private void Fail(Exception cause, Pending? dequeued = null)
    {
        Pending[] failed;
        lock (_gate)
        {
            if (_failure is not null)
            {
                failed = [];
            }
            else
            {
                _failure = cause;
                if (_state == State.Active)
                {
                    _state = State.Failed;
                }

                failed = [.. _awaiting];
                _awaiting.Clear();
                _unwritten.Clear();
                _failureReported |= dequeued is not null || Array.Exists(failed, p => !p.Unawaited);
            }
        }

        dequeued?.SetException(Describe(cause, dequeued.Token));
        foreach (var pending in failed)
        {
            pending.SetException(Describe(cause, pending.Token));
        }
    }

    /// <summary>The exception one operation throws for the transaction's failure.</summary>
    private static Exception Describe(Exception cause, CancellationToken cancellationToken) => cause switch
    {
        _ when cancellationToken.IsCancellationRequested => new OperationCanceledException("The call was cancelled.", cause, cancellationToken),
        RpcException e => Wire.Translate(e, cancellationToken),
        HyderException e => new HyderException(e.StatusCode, e.Message, e),
        OperationCanceledException => new HyderException(StatusCode.Cancelled, "The transaction's call was cancelled.", cause),
        _ => new HyderException(StatusCode.Unavailable, cause.Message, cause),
    };

    private void CancelCall()
    {
        Volatile.Write(ref _cancelled, true);
        try
        {
            _readCancel.Cancel();
        }
        catch (ObjectDisposedException)
        {
            // The transaction was disposed; its call is over.
        }
        catch (AggregateException e)
        {
            Fail(e);
        }
    }

    private void Return(Pending pending)
    {
        lock (_gate)
        {
            _free.Push(pending);
        }
    }

    /// <summary>
    /// One request waiting for its answer, reused by the transaction: awaited exactly once, through
    /// the <see cref="ValueTask{TResult}"/> <see cref="SendAsync"/> returns, and recycled there.
    /// Answers run the waiter's continuation inline on the reader (no hop per operation).
    /// </summary>
    private sealed class Pending(HyderTransaction owner) : IValueTaskSource<V1.TransactResponse>
    {
        private ManualResetValueTaskSourceCore<V1.TransactResponse> _core;

        public V1.TransactRequest? Request { get; set; }

        public V1.TransactResponse.ResponseOneofCase Expected { get; set; }

        public CancellationToken Token { get; set; }

        public CancellationTokenRegistration Registration { get; set; }

        /// <summary>True for a pipelined begin: answered, never awaited, never reused.</summary>
        public bool Unawaited { get; init; }

        public short Version => _core.Version;

        public void SetResult(V1.TransactResponse response) => _core.SetResult(response);

        public void SetException(Exception exception) => _core.SetException(exception);

        public V1.TransactResponse GetResult(short token)
        {
            try
            {
                return _core.GetResult(token);
            }
            finally
            {
                Registration.Dispose();
                Registration = default;
                Token = default;
                Request = null;
                _core.Reset();
                owner.Return(this);
            }
        }

        public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);
    }

    /// <summary>A <see cref="Batch"/> scope: disposing it sends what it held back. Dispose it once.</summary>
    public readonly struct BatchScope : IDisposable
    {
        private readonly HyderTransaction? _owner;

        internal BatchScope(HyderTransaction owner) => _owner = owner;

        /// <summary>Ends the scope; the outermost one's end sends the held requests.</summary>
        public void Dispose() => _owner?.Release();
    }
}
