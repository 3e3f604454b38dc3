using System.Threading.Tasks.Sources;

namespace Hyder.Server.Follower;

/// <summary>
/// How the log reader waits at the tail: for a bounded time, or until something says a block may
/// have come (an executor's append, a peer's broadcast block). Waking costs a volatile read while
/// the reader is busy; only a waiting reader is released.
/// </summary>
/// <remarks>
/// <para>The wait is the object itself, reused (an <see cref="IValueTaskSource"/> over
/// <see cref="ManualResetValueTaskSourceCore{TResult}"/>, with one timer re-armed per wait): a
/// loaded reader reaches the tail about once per commit, and a semaphore wait with a timeout
/// allocated a waiter node, an async box, a timer and a cancellation promise each time. One
/// waiter at a time (the reader), and each wait's task is awaited once.</para>
/// <para>A timer that fires late, for a wait a wake already ended, may end the next wait early:
/// harmless, the reader looks at the tail again before it waits.</para>
/// <para>Not disposable on purpose: a peer's connection may still call <see cref="Wake"/> after
/// the server stopped, and an unarmed timer holds nothing.</para>
/// </remarks>
#pragma warning disable CA1001 // See the remarks: nothing to release, and a late Wake must not throw.
internal sealed class TailWake : IValueTaskSource
#pragma warning restore CA1001
{
    private readonly Timer _timer;
    private ManualResetValueTaskSourceCore<bool> _core = new() { RunContinuationsAsynchronously = true };
    private CancellationTokenRegistration _registration;

    /// <summary>1 while a wait is armed and not yet ended (by the timer, a wake or cancellation).</summary>
    private int _waiting;

    public TailWake() =>
        _timer = new Timer(static state => ((TailWake)state!).End(null), this, Timeout.Infinite, Timeout.Infinite);

    /// <summary>Waits up to <paramref name="milliseconds"/> or until <see cref="Wake"/>; one waiter at a time.</summary>
    public ValueTask WaitAsync(int milliseconds, CancellationToken cancellationToken)
    {
        if (cancellationToken.IsCancellationRequested)
        {
            return ValueTask.FromCanceled(cancellationToken);
        }

        var task = new ValueTask(this, _core.Version);
        Volatile.Write(ref _waiting, 1);
        _timer.Change(milliseconds, Timeout.Infinite);
        if (cancellationToken.CanBeCanceled)
        {
            _registration = cancellationToken.UnsafeRegister(static (state, token) => ((TailWake)state!).End(new OperationCanceledException(token)), this);
        }

        return task;
    }

    /// <summary>Releases the reader if it waits (a wake-up while it reads is not needed: it looks again before it waits).</summary>
    public void Wake()
    {
        if (Volatile.Read(ref _waiting) != 0)
        {
            End(null);
        }
    }

    /// <summary>Ends the armed wait, once: the first of the timer, a wake and cancellation wins.</summary>
    private void End(Exception? failure)
    {
        if (Interlocked.CompareExchange(ref _waiting, 0, 1) != 1)
        {
            return;
        }

        if (failure is null)
        {
            _core.SetResult(true);
        }
        else
        {
            _core.SetException(failure);
        }
    }

    void IValueTaskSource.GetResult(short token)
    {
        if (token != _core.Version)
        {
            throw new InvalidOperationException("a tail wait was awaited twice");
        }

        // The wait is over (its continuation runs on the thread pool, never inside the timer's,
        // a wake's or the token's callback): disarm what may still fire, then ready the next wait.
        _registration.Dispose();
        _registration = default;
        _timer.Change(Timeout.Infinite, Timeout.Infinite);
        try
        {
            _core.GetResult(token);
        }
        finally
        {
            _core.Reset();
        }
    }

    ValueTaskSourceStatus IValueTaskSource.GetStatus(short token) => _core.GetStatus(token);

    void IValueTaskSource.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}
