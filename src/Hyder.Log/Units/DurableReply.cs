using System.Collections.Concurrent;
using System.Diagnostics;
using System.Runtime.CompilerServices;
using System.Threading.Tasks.Sources;

namespace Hyder.Log.Units;

/// <summary>
/// A unit's answer that is ready once a slot is durable: the <see cref="ValueTask{TResult}"/> a
/// write returns while group commit has not yet synced its slot. Pooled, so that a write waiting
/// for its fsync allocates no async state machine box: with tens of appends in flight the pooling
/// builder's per-thread and per-core caches overflow, and each write allocated one.
/// </summary>
/// <remarks>
/// <para>Ownership: rented by <see cref="When"/>, owned by the one <see cref="ValueTask{TResult}"/>
/// it returns, and back in the pool when that task's result has been taken
/// (<see cref="IValueTaskSource{TResult}.GetResult"/>, which every await calls exactly once). A
/// second <c>GetResult</c> on the same task, or one after the source was reused, throws
/// <see cref="InvalidOperationException"/> (the version moved on), as for any
/// <see cref="ValueTask{TResult}"/> awaited twice. A task whose result is never taken leaves its
/// source to the GC.</para>
/// <para>The continuation runs on the thread that completed the durable wait (group commit
/// completes its waiters on the thread pool, never on its flusher thread).</para>
/// </remarks>
internal sealed class DurableReply : IValueTaskSource<UnitReply>
{
    /// <summary>Sources kept at most: more than the writes a loaded unit has waiting for one fsync.</summary>
    internal const int MaxPooled = 1024;

    private static readonly ConcurrentQueue<DurableReply> s_pool = new();
    private static int s_pooled;

    private readonly Action _onDurable;
    private ManualResetValueTaskSourceCore<UnitReply> _core;
    private ConfiguredValueTaskAwaitable.ConfiguredValueTaskAwaiter _durable;
    private UnitReply _reply;

    /// <summary>1 while a task owns it, 0 in the pool (checked: a double return would hand one source to two writes).</summary>
    private int _rented;

    private DurableReply() => _onDurable = OnDurable;

    private static long s_created;

    /// <summary>Sources created because the pool was empty (tests read it).</summary>
    internal static long Created => Volatile.Read(ref s_created);

    /// <summary>
    /// <paramref name="reply"/> once <paramref name="durable"/> completes, or its failure: at
    /// once when it already has, else through a pooled source.
    /// </summary>
    public static ValueTask<UnitReply> When(ValueTask durable, UnitReply reply)
    {
        if (durable.IsCompletedSuccessfully)
        {
            durable.GetAwaiter().GetResult();
            return new ValueTask<UnitReply>(reply);
        }

        var source = Rent();
        source._reply = reply;
        source._durable = durable.ConfigureAwait(false).GetAwaiter();
        var task = new ValueTask<UnitReply>(source, source._core.Version);
        source._durable.UnsafeOnCompleted(source._onDurable);
        return task;
    }

    private static DurableReply Rent()
    {
        if (s_pool.TryDequeue(out var source))
        {
            Interlocked.Decrement(ref s_pooled);
        }
        else
        {
            source = new DurableReply();
            Interlocked.Increment(ref s_created);
        }

        if (Interlocked.Exchange(ref source._rented, 1) != 0)
        {
            throw new InvalidOperationException("a pooled durable reply was handed out while a write still owned it");
        }

        return source;
    }

    private void OnDurable()
    {
        try
        {
            _durable.GetResult();
            _core.SetResult(_reply);
        }
        catch (Exception e)
        {
            _core.SetException(e);
        }
    }

    UnitReply IValueTaskSource<UnitReply>.GetResult(short token)
    {
        // Awaited twice, or after the source went to another write; or read before it completed
        // (not allowed for a ValueTask): throw without giving back a source this task does not own.
        if (token != _core.Version || _core.GetStatus(token) == ValueTaskSourceStatus.Pending)
        {
            throw new InvalidOperationException("a durable reply's result was taken twice, after reuse, or before it completed");
        }

        try
        {
            return _core.GetResult(token);
        }
        finally
        {
            Return();
        }
    }

    private void Return()
    {
        if (Interlocked.Exchange(ref _rented, 0) != 1)
        {
            throw new InvalidOperationException("a pooled durable reply was returned twice");
        }

        _durable = default;
        _reply = default;
        _core.Reset();
        Debug.Assert(!_core.RunContinuationsAsynchronously, "the continuation runs where the fsync's waiters are completed");
        if (Interlocked.Increment(ref s_pooled) <= MaxPooled)
        {
            s_pool.Enqueue(this);
        }
        else
        {
            Interlocked.Decrement(ref s_pooled);
        }
    }

    ValueTaskSourceStatus IValueTaskSource<UnitReply>.GetStatus(short token) => _core.GetStatus(token);

    void IValueTaskSource<UnitReply>.OnCompleted(Action<object?> continuation, object? state, short token, ValueTaskSourceOnCompletedFlags flags) =>
        _core.OnCompleted(continuation, state, token, flags);
}
