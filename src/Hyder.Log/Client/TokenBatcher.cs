using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;
using Hyder.Log.Sequencing;

namespace Hyder.Log.Client;

/// <summary>
/// Coalesces the token requests of concurrent appends: at most one request is on its way to the
/// sequencer per client; appends that arrive meanwhile queue, and the next request reserves a
/// batch for all of them at once. Only appends that are waiting get tokens, so batching leaves no
/// holes. The append that sends a request (the leader) hands the role to the first queued append
/// when the answer comes, so no thread or task is kept for it, and waiters are pooled.
/// </summary>
internal sealed class TokenBatcher
{
    private const int MaxBatch = 1024;
    private const int PoolLimit = 4096;

    private readonly object _lock = new();
    private readonly Queue<Waiter> _queue = new();
    private readonly ConcurrentQueue<Waiter> _pool = new();
    private readonly List<Waiter> _batch = [];
    private bool _leading;

    /// <summary>Requests served so far, for tests and metrics.</summary>
    public long Requests { get; private set; }

    /// <summary>One token for the caller, in <paramref name="view"/>'s epoch.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<TokenReply> NextAsync(ClientView view, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        var me = Rent();
        var lead = false;
        lock (_lock)
        {
            if (_leading)
            {
                _queue.Enqueue(me);
            }
            else
            {
                _leading = lead = true;
            }
        }

        if (!lead)
        {
            var handed = await new ValueTask<TokenReply>(me, me.Version).ConfigureAwait(false);
            if (handed.Status != LeadStatus)
            {
                Return(me);
                return handed;
            }
        }

        return await LeadAsync(me, view).ConfigureAwait(false);
    }

    /// <summary>Not a status of the protocol: tells a queued waiter that it sends the next request.</summary>
    private const LogStatus LeadStatus = (LogStatus)255;

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<TokenReply> LeadAsync(Waiter me, ClientView view)
    {
        // Only the leader touches the batch list, and there is one leader at a time.
        _batch.Clear();
        lock (_lock)
        {
            while (_queue.Count > 0 && _batch.Count < MaxBatch - 1)
            {
                _batch.Add(_queue.Dequeue());
            }
        }

        TokenReply reply = default;
        Exception? failure = null;
        try
        {
            // Not the leader's token: the request serves every waiter, whoever gives up.
            reply = await view.Sequencer.NextAsync(view.Epoch, _batch.Count + 1, CancellationToken.None).ConfigureAwait(false);
            Requests++;
        }
        catch (Exception e)
        {
            failure = e;
        }

        for (var i = 0; i < _batch.Count; i++)
        {
            if (failure is not null)
            {
                _batch[i].Fail(failure);
            }
            else
            {
                _batch[i].Complete(reply.Status == LogStatus.Ok ? reply with { Address = reply.Address + 1 + i } : reply);
            }
        }

        _batch.Clear();
        Waiter? next = null;
        lock (_lock)
        {
            if (_queue.Count > 0)
            {
                next = _queue.Dequeue();
            }
            else
            {
                _leading = false;
            }
        }

        next?.Complete(new TokenReply(LeadStatus, 0, 0));
        Return(me);
        if (failure is not null)
        {
            throw failure;
        }

        return reply;
    }

    private Waiter Rent() => _pool.TryDequeue(out var waiter) ? waiter : new Waiter();

    private void Return(Waiter waiter)
    {
        if (_pool.Count < PoolLimit)
        {
            _pool.Enqueue(waiter);
        }
    }

    private sealed class Waiter : IValueTaskSource<TokenReply>
    {
        private ManualResetValueTaskSourceCore<TokenReply> _core = new() { RunContinuationsAsynchronously = true };

        public short Version => _core.Version;

        public void Complete(TokenReply reply) => _core.SetResult(reply);

        public void Fail(Exception exception) => _core.SetException(exception);

        public TokenReply GetResult(short token)
        {
            try
            {
                return _core.GetResult(token);
            }
            finally
            {
                _core.Reset();
            }
        }

        public ValueTaskSourceStatus GetStatus(short token) => _core.GetStatus(token);

        public void OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
            _core.OnCompleted(continuation, state, token, flags);
    }
}
