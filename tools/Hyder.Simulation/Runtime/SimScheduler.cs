namespace Hyder.Simulation.Runtime;

/// <summary>
/// The single-threaded deterministic scheduler: every piece of work (a timer, a message
/// delivery, an fsync completing) is an entry in one queue ordered by (virtual time, sequence
/// number) and runs on the thread that calls <see cref="Step"/>. Awaits continue inline on the
/// thread that completed the awaited task, which is always this one, so the order of everything
/// is fixed by the queue. Work posted from any other thread is counted in
/// <see cref="ForeignPosts"/>: a leak of real concurrency that makes the run fail.
/// </summary>
public sealed class SimScheduler : SynchronizationContext
{
    private readonly PriorityQueue<Entry, (long Time, long Sequence)> _queue = new();
    private readonly Lock _lock = new();
    private long _sequence;
    private int _owner = -1;

    /// <summary>Creates a scheduler whose random choices all come from <paramref name="seed"/>.</summary>
    public SimScheduler(long seed)
    {
        Seed = seed;
        Random = new Random(unchecked((int)(seed ^ (seed >> 32))));
        Time = new SimTimeProvider(this);
    }

    /// <summary>The seed.</summary>
    public long Seed { get; }

    /// <summary>The one source of randomness of a run.</summary>
    public Random Random { get; }

    /// <summary>The virtual clock.</summary>
    public SimTimeProvider Time { get; }

    /// <summary>Virtual time in ticks (100 ns) since the run began.</summary>
    public long Now { get; private set; }

    /// <summary>Steps run so far.</summary>
    public long Steps { get; private set; }

    /// <summary>Work posted from a thread other than the stepping one: a leak of real concurrency (should stay 0).</summary>
    public int ForeignPosts { get; private set; }

    /// <summary>Where the first foreign post came from.</summary>
    public string? FirstForeignPost { get; private set; }

    /// <summary>Entries waiting.</summary>
    public int Pending
    {
        get
        {
            lock (_lock)
            {
                return _queue.Count;
            }
        }
    }

    /// <summary>Runs <paramref name="action"/> at virtual time now + <paramref name="delay"/>.</summary>
    public void After(TimeSpan delay, Action action) => At(Now + Math.Max(0, delay.Ticks), action);

    /// <summary>Runs <paramref name="action"/> at virtual time <paramref name="time"/> (not before now).</summary>
    public void At(long time, Action action)
    {
        lock (_lock)
        {
            if (_owner != -1 && Environment.CurrentManagedThreadId != _owner)
            {
                ForeignPosts++;
                FirstForeignPost ??= Environment.StackTrace;
            }

            _queue.Enqueue(new Entry(action, null, null), (Math.Max(time, Now), _sequence++));
        }
    }

    /// <inheritdoc />
    public override void Post(SendOrPostCallback d, object? state)
    {
        lock (_lock)
        {
            if (_owner != -1 && Environment.CurrentManagedThreadId != _owner)
            {
                ForeignPosts++;
            }

            _queue.Enqueue(new Entry(null, d, state), (Now, _sequence++));
        }
    }

    /// <inheritdoc />
    public override void Send(SendOrPostCallback d, object? state) => throw new NotSupportedException("the simulation never blocks on its own scheduler");

    /// <inheritdoc />
    public override SynchronizationContext CreateCopy() => this;

    /// <summary>Starts <paramref name="work"/> as a step of its own; its exceptions are the caller's to observe.</summary>
    public Task Spawn(Func<Task> work)
    {
        var done = new TaskCompletionSource();
        At(Now, () =>
        {
            Task task;
            try
            {
                task = work();
            }
            catch (Exception e)
            {
                done.SetException(e);
                return;
            }

            task.ContinueWith(
                static (t, s) =>
                {
                    var tcs = (TaskCompletionSource)s!;
                    if (t.IsFaulted)
                    {
                        tcs.SetException(t.Exception!.InnerExceptions);
                    }
                    else if (t.IsCanceled)
                    {
                        tcs.SetCanceled();
                    }
                    else
                    {
                        tcs.SetResult();
                    }
                },
                done,
                CancellationToken.None,
                TaskContinuationOptions.ExecuteSynchronously,
                TaskScheduler.Default);
        });
        return done.Task;
    }

    /// <summary>Runs the next entry; false when nothing is queued.</summary>
    public bool Step()
    {
        Entry entry;
        lock (_lock)
        {
            if (!_queue.TryDequeue(out entry, out var key))
            {
                return false;
            }

            Now = Math.Max(Now, key.Time);
        }

        // No SynchronizationContext is installed while a step runs: the runtime inlines an await's
        // continuation only where there is none (a custom context would push every
        // ConfigureAwait(false) continuation of production code to the thread pool). Every task
        // of the simulation is completed inside a step, so continuations run inline, here, in a
        // fixed order.
        _owner = Environment.CurrentManagedThreadId;
        Steps++;
        if (entry.Action is not null)
        {
            entry.Action();
        }
        else
        {
            entry.Callback!(entry.State);
        }

        return true;
    }

    /// <summary>The virtual time of the next entry, or null if none.</summary>
    public long? NextTime
    {
        get
        {
            lock (_lock)
            {
                return _queue.TryPeek(out _, out var key) ? key.Time : null;
            }
        }
    }

    private readonly record struct Entry(Action? Action, SendOrPostCallback? Callback, object? State);
}
