namespace Hyder.Server.Follower;

/// <summary>
/// How the log reader waits at the tail: for a bounded time, or until something says a block may
/// have come (an executor's append, a peer's broadcast block). Waking costs a volatile read while
/// the reader is busy; only a waiting reader is released.
/// </summary>
/// <remarks>
/// Not disposable on purpose: a peer's connection may still call <see cref="Wake"/> after the
/// server stopped, and the semaphore holds no kernel handle (its wait handle is never asked for).
/// </remarks>
#pragma warning disable CA1001 // See the remarks: nothing to release, and a late Wake must not throw.
internal sealed class TailWake
#pragma warning restore CA1001
{
    private readonly SemaphoreSlim _wake = new(0);
    private int _waiting;

    /// <summary>Waits up to <paramref name="milliseconds"/> or until <see cref="Wake"/>; one waiter at a time.</summary>
    public async Task WaitAsync(int milliseconds, CancellationToken cancellationToken)
    {
        Volatile.Write(ref _waiting, 1);
        try
        {
            await _wake.WaitAsync(milliseconds, cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            Volatile.Write(ref _waiting, 0);
        }
    }

    /// <summary>Releases the reader if it waits (a wake-up while it reads is not needed: it looks again before it waits).</summary>
    public void Wake()
    {
        if (Volatile.Read(ref _waiting) != 0 && _wake.CurrentCount == 0)
        {
            _wake.Release();
        }
    }
}
