using System.Collections.Concurrent;
using System.Threading.Tasks.Sources;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Microsoft.Extensions.ObjectPool;

namespace Hyder.Server.Core;

/// <summary>One ordinal on its way from the log reader through deserialization to the pipeline.</summary>
internal sealed class Job
{
    public long Ordinal;
    public long Position;
    public ReadOnlyMemory<byte> Final;
    public ReadOnlyMemory<byte>[] Parts = [];
    public long SnapshotSequence;

    /// <summary>This server's own transaction, when it ran here (its intention object is used as is).</summary>
    public PendingTransaction? Local;

    /// <summary>The intention to meld (decoded, or the local one).</summary>
    public Intention? Intention;

    /// <summary>True when the ordinal was decided before meld (<see cref="Decision"/>).</summary>
    public bool IsDecided;

    /// <summary>The decision made before meld: a committed no-op or an abort.</summary>
    public MeldOutcome Decision;

    /// <summary>A checkpoint barrier (a committed no-op ending a pair).</summary>
    public bool IsBarrier;

    /// <summary>The barrier's marker names this server's checkpoint request.</summary>
    public CheckpointRequest? Checkpoint;

    /// <summary>Set (volatile) by the deserializer once the job is ready for the pipeline.</summary>
    public bool Done;

    public static MeldOutcome Abort(AbortCause cause, string reason) => new() { Cause = cause, RejectReason = reason };

    public static MeldOutcome NoOp => new() { Committed = true };

    /// <summary>Forgets everything (a job going back to its pool).</summary>
    private void Reset()
    {
        Ordinal = 0;
        Position = 0;
        Final = default;
        Parts = [];
        SnapshotSequence = 0;
        Local = null;
        Intention = null;
        IsDecided = false;
        Decision = default;
        IsBarrier = false;
        Checkpoint = null;
        Done = false;
    }

    /// <summary>
    /// The jobs one follower reads intentions into: rented by the reader, returned once the job has
    /// been submitted (by the reader or the submitter), so an ordinal allocates no job. A barrier's
    /// job is never returned (the checkpoint writer keeps it); one lost to a failure is left to the GC.
    /// </summary>
    internal sealed class Pool(int retained)
    {
        private readonly DefaultObjectPool<Job> _jobs = new(new Policy(), retained);

        /// <summary>Jobs returned (for tests).</summary>
        private long _returned;

        public long Returned => Interlocked.Read(ref _returned);

        public Job Rent() => _jobs.Get();

        public void Return(Job job)
        {
            Interlocked.Increment(ref _returned);
            _jobs.Return(job);
        }

        private sealed class Policy : IPooledObjectPolicy<Job>
        {
            public Job Create() => new();

            public bool Return(Job obj)
            {
                obj.Reset();
                return true;
            }
        }
    }
}

/// <summary>
/// A transaction of this server awaiting its outcome: the awaitable final meld completes, pooled
/// (an <see cref="IValueTaskSource{T}"/> over <see cref="ManualResetValueTaskSourceCore{T}"/>)
/// so that a commit allocates no Task, TaskCompletionSource or WaitAsync wrapper.
/// </summary>
/// <remarks>
/// <para>Threaded, the outcome's waiter continues on the thread pool, never on the final-meld
/// thread; a cooperative server (one thread) continues it inline, after the submit that melded it.</para>
/// <para>Two sides hold it: the executor (until it has its result and has dropped its cancellation
/// registration) and the delivery (until final meld has completed it). It goes back to the pool
/// only when both let go (<see cref="ReleaseWaiter"/>, <see cref="ReleaseDelivery"/>); one that
/// is never delivered (an append that failed, a server that stopped) is left to the GC.</para>
/// </remarks>
internal sealed class PendingTransaction : IValueTaskSource<MeldOutcome>
{
    private const int MaxPooled = 1024;
    private static readonly ConcurrentQueue<PendingTransaction> s_pool = new();
    private static int s_pooled;

    private ManualResetValueTaskSourceCore<MeldOutcome> _core;
    private int _completed;
    private int _holders;
    private CancellationTokenRegistration _registration;

    private PendingTransaction()
    {
    }

    public Intention Intention { get; private set; } = null!;

    public long Ordinal;

    /// <summary>A pending transaction for <paramref name="intention"/>, from the pool when one is free.</summary>
    public static PendingTransaction Rent(Intention intention, bool cooperative)
    {
        if (s_pool.TryDequeue(out var p))
        {
            Interlocked.Decrement(ref s_pooled);
        }
        else
        {
            p = new PendingTransaction();
        }

        p.Intention = intention;
        p.Ordinal = 0;
        p._completed = 0;
        p._holders = 2;
        p._core.RunContinuationsAsynchronously = !cooperative;
        return p;
    }

    /// <summary>The outcome, once final meld reached it; cancelled by <paramref name="cancellationToken"/> (an <see cref="OperationCanceledException"/> for it).</summary>
    public ValueTask<MeldOutcome> WaitAsync(CancellationToken cancellationToken)
    {
        if (cancellationToken.CanBeCanceled)
        {
            _registration = cancellationToken.UnsafeRegister(
                static (state, token) => ((PendingTransaction)state!).TrySetException(new OperationCanceledException(token)), this);
        }

        return new ValueTask<MeldOutcome>(this, _core.Version);
    }

    /// <summary>Completes the outcome (the first completion wins).</summary>
    public bool TrySetResult(in MeldOutcome outcome)
    {
        if (Interlocked.Exchange(ref _completed, 1) != 0)
        {
            return false;
        }

        _core.SetResult(outcome);
        return true;
    }

    /// <summary>The server stopped before the outcome was known.</summary>
    public bool TrySetCanceled() => TrySetException(new TaskCanceledException());

    private bool TrySetException(Exception e)
    {
        if (Interlocked.Exchange(ref _completed, 1) != 0)
        {
            return false;
        }

        _core.SetException(e);
        return true;
    }

    /// <summary>The executor has its result: drops its cancellation registration and its hold.</summary>
    public void ReleaseWaiter()
    {
        _registration.Dispose();
        _registration = default;
        Release();
    }

    /// <summary>Final meld has completed it and forgotten it.</summary>
    public void ReleaseDelivery() => Release();

    private void Release()
    {
        if (Interlocked.Decrement(ref _holders) != 0)
        {
            return;
        }

        Intention = null!;
        _core.Reset();
        if (Interlocked.Increment(ref s_pooled) <= MaxPooled)
        {
            s_pool.Enqueue(this);
        }
        else
        {
            Interlocked.Decrement(ref s_pooled);
        }
    }

    MeldOutcome IValueTaskSource<MeldOutcome>.GetResult(short token) => _core.GetResult(token);

    ValueTaskSourceStatus IValueTaskSource<MeldOutcome>.GetStatus(short token) => _core.GetStatus(token);

    void IValueTaskSource<MeldOutcome>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}

/// <summary>A checkpoint this server asked for.</summary>
internal sealed class CheckpointRequest(ulong id, bool cooperative = false)
{
    public ulong Id { get; } = id;

    public TaskCompletionSource<long> Done { get; } = new(cooperative ? TaskCreationOptions.None : TaskCreationOptions.RunContinuationsAsynchronously);
}
