namespace Hyder.Log.Storage;

/// <summary>
/// Group-commit fsync: writers append to the page cache and wait here; one flusher thread syncs
/// everything appended so far and releases every waiter it covered, so N concurrent writers cost
/// one fsync, not N. One generation object per fsync, none per write.
/// </summary>
/// <remarks>
/// With a <see cref="GroupCommitDelay"/>, a flush whose predecessor covered at least
/// <see cref="GroupCommitDelay.Siblings"/> slots, in a process whose CPU is busy, first sleeps
/// <see cref="GroupCommitDelay.Wait"/>, so that the writers still running join it: each fsync
/// costs the flusher about the same CPU (the synchronous writes of the slots, the inode and the
/// durable mark, and their wake-ups; docs/log.md) however many slots it covers. A lone writer's
/// flushes cover one slot and never wait.
/// </remarks>
internal sealed class GroupCommit : IDisposable
{
    private readonly Action _flush;
    private readonly Action<long>? _afterFlush;
    private readonly GroupCommitDelay _delay;
    private readonly object _lock = new();
    private readonly SemaphoreSlim _signal = new(0);
    private readonly Thread _thread;
    private long _appended;
    private long _durable;
    private Generation? _waiting;
    private Generation? _running;
    private volatile bool _stopping;
    private Exception? _failure;
    private long _lastBatch;
    private long _delayed;

    /// <summary>
    /// Starts the flusher; <paramref name="flush"/> makes every appended slot durable, and
    /// <paramref name="afterFlush"/>, if given, runs on the flusher after each flush has released
    /// its writers, with the number of slots now durable (housekeeping that no writer waits for).
    /// </summary>
    public GroupCommit(Action flush, string name, GroupCommitDelay delay = default, Action<long>? afterFlush = null)
    {
        _flush = flush;
        _afterFlush = afterFlush;
        _delay = delay;
        _thread = new Thread(Run) { IsBackground = true, Name = name };
        _thread.Start();
    }

    /// <summary>Slots made durable so far; read by tests and metrics.</summary>
    public long Durable => Volatile.Read(ref _durable);

    /// <summary>Fsync calls made so far.</summary>
    public long Flushes { get; private set; }

    /// <summary>Flushes that waited for more writes before their fsync.</summary>
    public long Delayed => Volatile.Read(ref _delayed);

    /// <summary>Records that slots below <paramref name="count"/> are written (not yet durable).</summary>
    public void Appended(long count) => Volatile.Write(ref _appended, count);

    /// <summary>Records that slots below <paramref name="count"/> are already durable (recovered ones).</summary>
    public void Recovered(long count)
    {
        Volatile.Write(ref _appended, count);
        Volatile.Write(ref _durable, count);
    }

    /// <summary>Completes once the slot at <paramref name="location"/> is durable.</summary>
    public ValueTask WaitAsync(long location)
    {
        var needed = location + 1;
        if (Volatile.Read(ref _durable) >= needed)
        {
            return default;
        }

        lock (_lock)
        {
            if (_failure is not null)
            {
                return ValueTask.FromException(new IOException("An fsync failed; the unit no longer accepts writes.", _failure));
            }

            if (_durable >= needed)
            {
                return default;
            }

            if (_running is not null && _running.Target >= needed)
            {
                return new ValueTask(_running.Completion.Task);
            }

            if (_waiting is null)
            {
                _waiting = new Generation();
                _signal.Release();
            }

            return new ValueTask(_waiting.Completion.Task);
        }
    }

    private void Run()
    {
        while (true)
        {
            if (!_stopping)
            {
                _signal.Wait();
                if (_delay.Applies(_lastBatch) && !_stopping)
                {
                    PreciseSleep.For(_delay.Wait);
                    Interlocked.Increment(ref _delayed);
                }
            }

            Generation generation;
            lock (_lock)
            {
                if (_waiting is null)
                {
                    if (_stopping)
                    {
                        return;
                    }

                    continue;
                }

                generation = _waiting;
                _waiting = null;
                generation.Target = Volatile.Read(ref _appended);
                _lastBatch = generation.Target - _durable;
                _running = generation;
            }

            try
            {
                _flush();
                Flushes++;
            }
            catch (Exception e) when (e is IOException or ObjectDisposedException)
            {
                lock (_lock)
                {
                    _failure = e;
                    _running = null;
                }

                generation.Completion.TrySetException(new IOException("fsync failed.", e));
                continue;
            }

            lock (_lock)
            {
                Volatile.Write(ref _durable, Math.Max(_durable, generation.Target));
                _running = null;
            }

            generation.Completion.TrySetResult();
            _afterFlush?.Invoke(generation.Target);
        }
    }

    /// <summary>Stops the flusher after it has served every waiter.</summary>
    public void Dispose()
    {
        _stopping = true;
        _signal.Release();
        _thread.Join();
        lock (_lock)
        {
            _waiting?.Completion.TrySetException(new ObjectDisposedException(nameof(GroupCommit)));
        }

        _signal.Dispose();
    }

    private sealed class Generation
    {
        public long Target;
        public readonly TaskCompletionSource Completion = new(TaskCreationOptions.RunContinuationsAsynchronously);
    }
}
