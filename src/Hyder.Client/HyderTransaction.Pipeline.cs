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
    private bool _ending;
    private Exception? _failure;
    private bool _failureReported;
    private Task? _reader;

    /// <summary>The writer last started (<see cref="WriteRequestsAsync"/>; it never faults).</summary>
    private Task? _writer;

    /// <summary>True once the writer ended the request stream after a commit or an abort.</summary>
    private bool _requestsEnded;

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
            write = !_writing;
            _writing = true;
        }

        if (cancellationToken.CanBeCanceled)
        {
            // Cancelling one pending operation ends the call, as cancelling the only one does.
            pending.Registration = cancellationToken.UnsafeRegister(s_cancel, this);
        }

        var wait = new ValueTask<V1.TransactResponse>(pending, pending.Version);
        if (write)
        {
            Volatile.Write(ref _writer, WriteRequestsAsync());
        }

        return wait;
    }

    /// <summary>Writes queued requests in order until none is left; a failure stops the pipeline.</summary>
    private async Task WriteRequestsAsync()
    {
        while (true)
        {
            V1.TransactRequest request;
            lock (_gate)
            {
                if (_failure is not null || !_unwritten.TryDequeue(out var next))
                {
                    _writing = false;
                    return;
                }

                request = next.Request!;
                next.Request = null;
            }

            try
            {
                await _call.RequestStream.WriteAsync(request).ConfigureAwait(false);
                if (request.RequestCase is V1.TransactRequest.RequestOneofCase.Commit or V1.TransactRequest.RequestOneofCase.Abort)
                {
                    // Nothing follows a commit or an abort: the request stream ends with it, so the
                    // server, which waits for that end after the outcome, ends the call at once.
                    await _call.RequestStream.CompleteAsync().ConfigureAwait(false);
                    Volatile.Write(ref _requestsEnded, true);
                }
            }
            catch (Exception e) when (e is RpcException or InvalidOperationException or OperationCanceledException or IOException)
            {
                lock (_gate)
                {
                    _writing = false;
                }

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

    /// <summary>Reads answers until the outcome, completing pending requests in order.</summary>
    private async Task ReadResponsesAsync()
    {
        try
        {
            while (await _call.ResponseStream.MoveNext(_readCancel.Token).ConfigureAwait(false))
            {
                var response = _call.ResponseStream.Current;
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
                    return;
                }

                // After SetResult the pending request may already be reused: it is the last touch.
                // The outcome is the last answer: the stream is left to FinishAsync.
                var last = response.ResponseCase == V1.TransactResponse.ResponseOneofCase.Outcome;
                pending.SetResult(response);
                if (last)
                {
                    return;
                }
            }

            Fail(new HyderException(StatusCode.Internal, "The server ended the transaction without an answer."));
        }
        catch (Exception e) when (e is RpcException or OperationCanceledException or InvalidOperationException or IOException)
        {
            Fail(e);
        }
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
                _failureReported = failed.Length > 0 || dequeued is not null;
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
}
