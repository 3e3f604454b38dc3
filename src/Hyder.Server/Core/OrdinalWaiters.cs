namespace Hyder.Server.Core;

/// <summary>
/// Callers waiting until the server has melded a given ordinal (a client's "at least ordinal N"
/// token, docs/api.md "Read your writes"). The final-meld thread announces each ordinal with
/// <see cref="Advance"/>; a wait whose ordinal is already melded completes at once without
/// allocating, and only a caller that must wait gets a task of its own.
/// </summary>
/// <remarks>
/// <para>The final meld pays one store, one full fence and one load per ordinal while nobody waits
/// for it: <see cref="Advance"/> takes the lock only when the lowest waited-for ordinal is reached.
/// A waiter publishes its ordinal and then reads the melded ordinal; <see cref="Advance"/> publishes
/// the melded ordinal and then reads the lowest waited-for one. With a full fence between the
/// store and the load on both sides, at least one of them sees the other, so no waiter is missed.</para>
/// <para>Waiters whose caller gives up (cancellation, the server's wait limit) leave the list at
/// once, so a token for an ordinal far in the future holds nothing after its call ends.</para>
/// </remarks>
internal sealed class OrdinalWaiters
{
    private readonly Lock _lock = new();
    private readonly List<Waiter> _waiting = [];
    private readonly bool _asynchronousContinuations;
    private long _reached;
    private long _lowest = long.MaxValue;
    private Exception? _stopped;

    /// <summary>Creates the list with <paramref name="reached"/> melded already.</summary>
    /// <param name="reached">The last ordinal melded.</param>
    /// <param name="asynchronousContinuations">
    /// True: a completed wait continues on the thread pool, never on the thread that calls
    /// <see cref="Advance"/> (the final-meld thread). False: inline (cooperative mode, where
    /// <see cref="Advance"/> runs outside the pipeline's steps).
    /// </param>
    public OrdinalWaiters(long reached, bool asynchronousContinuations)
    {
        _reached = reached;
        _asynchronousContinuations = asynchronousContinuations;
    }

    /// <summary>The last ordinal announced.</summary>
    public long Reached => Volatile.Read(ref _reached);

    /// <summary>Callers waiting now (tests and diagnostics).</summary>
    public int Waiting
    {
        get
        {
            lock (_lock)
            {
                return _waiting.Count;
            }
        }
    }

    /// <summary>
    /// Completes when <paramref name="ordinal"/> is melded. Completed at once (no allocation) when
    /// it already is; cancelled by <paramref name="cancellationToken"/>; fails with the exception
    /// given to <see cref="Stop"/> when the server stops first.
    /// </summary>
    public ValueTask WaitAsync(long ordinal, CancellationToken cancellationToken)
    {
        if (Volatile.Read(ref _reached) >= ordinal)
        {
            return default;
        }

        return WaitSlowAsync(ordinal, cancellationToken);
    }

    /// <summary>The final-meld thread: <paramref name="ordinal"/> is melded and the current state includes it.</summary>
    public void Advance(long ordinal)
    {
        Volatile.Write(ref _reached, ordinal);
        Interlocked.MemoryBarrier();
        if (ordinal < Volatile.Read(ref _lowest))
        {
            return;
        }

        lock (_lock)
        {
            var lowest = long.MaxValue;
            for (var i = _waiting.Count - 1; i >= 0; i--)
            {
                var w = _waiting[i];
                if (w.Ordinal <= ordinal)
                {
                    RemoveAt(i);
                    w.TrySetResult();
                }
                else
                {
                    lowest = Math.Min(lowest, w.Ordinal);
                }
            }

            Volatile.Write(ref _lowest, lowest);
        }
    }

    /// <summary>Fails every wait, now and later, with <paramref name="reason"/> (the server is stopping).</summary>
    public void Stop(Exception reason)
    {
        Waiter[] waiting;
        lock (_lock)
        {
            _stopped ??= reason;
            waiting = [.. _waiting];
            _waiting.Clear();
            Volatile.Write(ref _lowest, long.MaxValue);
        }

        foreach (var w in waiting)
        {
            w.TrySetException(reason);
        }
    }

    private async ValueTask WaitSlowAsync(long ordinal, CancellationToken cancellationToken)
    {
        cancellationToken.ThrowIfCancellationRequested();
        var waiter = new Waiter(this, ordinal, _asynchronousContinuations);
        lock (_lock)
        {
            if (_stopped is { } stopped)
            {
                throw stopped;
            }

            _waiting.Add(waiter);
            if (ordinal < _lowest)
            {
                Volatile.Write(ref _lowest, ordinal);
            }
        }

        // The ordinal may have been melded between the first check and the publication above.
        Interlocked.MemoryBarrier();
        if (Volatile.Read(ref _reached) >= ordinal)
        {
            Remove(waiter);
            return;
        }

        await using (cancellationToken.UnsafeRegister(static (state, token) => ((Waiter)state!).Cancel(token), waiter).ConfigureAwait(false))
        {
            await waiter.Task.ConfigureAwait(false);
        }
    }

    /// <summary>Takes <paramref name="waiter"/> out of the list if it is still there.</summary>
    private bool Remove(Waiter waiter)
    {
        lock (_lock)
        {
            var i = _waiting.IndexOf(waiter);
            if (i < 0)
            {
                return false;
            }

            RemoveAt(i);
            if (waiter.Ordinal == _lowest)
            {
                var lowest = long.MaxValue;
                foreach (var w in _waiting)
                {
                    lowest = Math.Min(lowest, w.Ordinal);
                }

                Volatile.Write(ref _lowest, lowest);
            }

            return true;
        }
    }

    /// <summary>Removes the waiter at <paramref name="i"/> by moving the last one there (the list has no order).</summary>
    private void RemoveAt(int i)
    {
        var last = _waiting.Count - 1;
        _waiting[i] = _waiting[last];
        _waiting.RemoveAt(last);
    }

    private sealed class Waiter(OrdinalWaiters owner, long ordinal, bool asynchronous)
        : TaskCompletionSource(asynchronous ? TaskCreationOptions.RunContinuationsAsynchronously : TaskCreationOptions.None)
    {
        public long Ordinal { get; } = ordinal;

        public void Cancel(CancellationToken token)
        {
            if (owner.Remove(this))
            {
                TrySetCanceled(token);
            }
        }
    }
}
