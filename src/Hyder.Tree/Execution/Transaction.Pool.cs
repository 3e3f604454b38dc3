using System.Collections.Concurrent;
using Hyder.Tree.Memory;

namespace Hyder.Tree;

/// <summary>
/// Reuse of finished transactions: an executor starts one per transaction, and a server that
/// knows nothing else holds its transaction gives it back (<see cref="Recycle"/>) with its lists,
/// so a steady stream of transactions allocates no <see cref="Transaction"/> objects.
/// </summary>
/// <remarks>
/// A pool shared by every thread (a transaction may finish on another thread than it began on),
/// bounded at <see cref="MaxPooled"/>. A transaction goes back only through an explicit
/// <see cref="Recycle"/>: <see cref="Dispose"/> never pools, so code that keeps a reference past
/// its <c>using</c> is unaffected. Recycling twice throws <see cref="InvariantViolationException"/>
/// (two owners of one transaction would run two transactions' work on one tree); a recycled
/// transaction keeps no state, node or key alive, and any operation on it throws as on a finished one.
/// </remarks>
public sealed partial class Transaction
{
    /// <summary>Finished transactions kept at most.</summary>
    internal const int MaxPooled = 1024;

    private static readonly ConcurrentQueue<Transaction> s_free = new();
    private static int s_freeCount;

    /// <summary>True while the transaction waits in the pool.</summary>
    private bool _recycled;

    /// <summary>A transaction on <paramref name="snapshot"/> (pinned for it), reused from the pool when one is free.</summary>
    internal static Transaction Rent(Database database, DatabaseState snapshot, IsolationLevel isolation, NodePool pool)
    {
        if (s_free.TryDequeue(out var tx))
        {
            Interlocked.Decrement(ref s_freeCount);
            tx.Start(database, snapshot, isolation, pool);
            return tx;
        }

        return new Transaction(database, snapshot, isolation, pool);
    }

    /// <summary>
    /// Gives a completed or disposed transaction back for reuse. The caller must hold the only
    /// reference that will ever be used again: the next <see cref="Database.Begin"/> may return
    /// this object as another transaction.
    /// </summary>
    /// <exception cref="InvalidOperationException">The transaction is still running.</exception>
    /// <exception cref="InvariantViolationException">It was recycled already.</exception>
    public void Recycle()
    {
        if (_recycled)
        {
            ThrowHelper.ThrowInvariant("a transaction was recycled twice");
        }

        EnsureFinishedForRecycle();
        _recycled = true;
        _root = null;
        Snapshot = null!;
        _database = null!;
        _pool = null!;
        _deletes?.Clear();
        _ranges?.Clear();
        _created?.Clear();
        if (Interlocked.Increment(ref s_freeCount) <= MaxPooled)
        {
            s_free.Enqueue(this);
        }
        else
        {
            Interlocked.Decrement(ref s_freeCount);
        }
    }

    private void EnsureFinishedForRecycle()
    {
        if (!_finished)
        {
            ThrowHelper.ThrowInvalidOperation("a running transaction cannot be recycled; complete or dispose it first");
        }
    }
}
