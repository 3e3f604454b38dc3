using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Memory;
using SplitKeyReadException = Hyder.Tree.Commutative.SplitKeyReadException;

namespace Hyder.Server.Core;

/// <summary>An interactive transaction of a <see cref="TransactionServer"/>: one operation at a time, then commit.</summary>
/// <remarks>
/// Doppel's stash (docs/doppel.md, "Split phases"): an operation that meets a key split in the
/// snapshot's phase waits for the next reconciled state, replays the operations already answered
/// on it and goes on there when every answer is the same (the client cannot tell); otherwise the
/// transaction aborts (<see cref="EngineErrorCode.Aborted"/>, retryable).
/// </remarks>
internal sealed class InteractiveTransaction(TransactionServer server, Transaction tx, NodePool pool) : IInteractiveTransaction
{
    private readonly Lock _lock = new();
    private Transaction _tx = tx;

    /// <summary>The running transaction's snapshot and isolation, kept here: <see cref="_tx"/> goes back to the pool when the transaction ends.</summary>
    private long _snapshotSequence = tx.Snapshot.Sequence;
    private readonly IsolationLevel _isolation = tx.Isolation;

    /// <summary>The node pool rented for <see cref="_tx"/>; given back once when the transaction ends.</summary>
    private NodePool? _pool = pool;
    private int _operations;
    private bool _finished;

    /// <summary>
    /// The operations answered so far, with their answers, for a replay on the reconciled state;
    /// kept only while the snapshot lies inside a split phase (only then can an operation be
    /// stashed), so no other transaction pays for it.
    /// </summary>
    private List<(Operation Operation, OperationResult Result)>? _done = tx.Snapshot.SplitKeys is null ? null : [];

    public long SnapshotSequence => _snapshotSequence;

    public IsolationLevel Isolation => _isolation;

    public OperationResult Execute(Operation operation) => ExecuteAsync(operation).AsTask().GetAwaiter().GetResult();

    public async ValueTask<OperationResult> ExecuteAsync(Operation operation, CancellationToken cancellationToken = default)
    {
        RequestChecks.Operation(operation, server.Limits);
        long stashedAfter;
        lock (_lock)
        {
            EnsureOpen();
            if (++_operations > server.Limits.MaxOperations)
            {
                throw new EngineException(EngineErrorCode.InvalidArgument, $"more than {server.Limits.MaxOperations} operations in one transaction");
            }

            var cpu = ServerMetrics.StartOperationCpu();
            try
            {
                return Done(operation, TransactionServer.Run(_tx, operation, server.Limits));
            }
            catch (SplitKeyReadException e)
            {
                stashedAfter = e.SnapshotSequence;
            }
            finally
            {
                server.Metrics.EndOperationCpu(cpu);
            }
        }

        server.Metrics.Add(Counter.Stashed);
        var freshPool = server.RentPool();
        Transaction fresh;
        try
        {
            fresh = await server.BeginReconciledAsync(_isolation, stashedAfter, freshPool, cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            server.ReturnPool(freshPool);
            throw;
        }

        lock (_lock)
        {
            try
            {
                EnsureOpen();
                foreach (var (op, answered) in _done!)
                {
                    if (!Same(TransactionServer.Run(fresh, op, server.Limits), answered))
                    {
                        Abort();
                        throw new EngineException(
                            EngineErrorCode.Aborted,
                            $"the transaction met a key split in its snapshot's phase (state #{stashedAfter}) and an earlier answer differs on the reconciled state #{fresh.Snapshot.Sequence}: retry it");
                    }
                }

                var result = TransactionServer.Run(fresh, operation, server.Limits);
                (fresh, _tx) = (_tx, fresh);
                _snapshotSequence = _tx.Snapshot.Sequence;
                (freshPool, _pool) = (_pool!, freshPool);

                // A reconciled state lies inside no phase: nothing more can be stashed.
                _done = null;
                return result;
            }
            finally
            {
                // The transaction left behind (the stashed one, or the fresh one that failed): nothing else holds it.
                fresh.Dispose();
                fresh.Recycle();
                server.ReturnPool(freshPool);
            }
        }
    }

    [System.Runtime.CompilerServices.AsyncMethodBuilder(typeof(System.Runtime.CompilerServices.PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<TransactionOutcome> CommitAsync(CancellationToken cancellationToken = default)
    {
        Intention? intention;
        lock (_lock)
        {
            EnsureOpen();
            server.ThrowIfStopping();
            _finished = true;
            if (!_tx.HasWrites)
            {
                _tx.Complete();
                _tx.Recycle();
                ReturnPool();
                server.Metrics.Add(Counter.ReadOnlyCommits);
                return new TransactionOutcome(TransactionStatus.Committed, Tree.Meld.AbortCause.None, null, 0, SnapshotSequence, []);
            }
        }

        try
        {
            await server.AdmitAsync(cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            _tx.Dispose();
            _tx.Recycle();
            ReturnPool();
            throw;
        }

        intention = _tx.Complete();
        _tx.Recycle();
        ReturnPool();
        return await server.AppendAndWaitAsync(intention!, SnapshotSequence, [], cancellationToken).ConfigureAwait(false);
    }

    public void Abort()
    {
        lock (_lock)
        {
            if (!_finished)
            {
                _finished = true;
                _tx.Dispose();
                _tx.Recycle();
                ReturnPool();
            }
        }
    }

    /// <summary>Gives the rented node pool back, once: the transaction has ended and takes no more nodes from it.</summary>
    private void ReturnPool()
    {
        if (Interlocked.Exchange(ref _pool, null) is { } p)
        {
            server.ReturnPool(p);
        }
    }

    public ValueTask DisposeAsync()
    {
        Abort();
        return ValueTask.CompletedTask;
    }

    private OperationResult Done(Operation operation, OperationResult result)
    {
        if (_done is not null)
        {
            // Replayed after the call returned: a server that recycles values has promised its
            // callers their arrays back (docs/value-storage.md), so it keeps a copy.
            _done.Add((server.Database.Values is not null && operation.Value is { } value ? operation with { Value = value.ToArray() } : operation, result));
        }

        return result;
    }

    /// <summary>True when two answers to one operation are the same (found, value, rows).</summary>
    private static bool Same(OperationResult a, OperationResult b)
    {
        if (a.Found != b.Found || !a.Value.AsSpan().SequenceEqual(b.Value) || (a.Rows?.Count ?? 0) != (b.Rows?.Count ?? 0))
        {
            return false;
        }

        for (var i = 0; i < (a.Rows?.Count ?? 0); i++)
        {
            if (!a.Rows![i].Key.AsSpan().SequenceEqual(b.Rows![i].Key) || !a.Rows[i].Value.AsSpan().SequenceEqual(b.Rows[i].Value))
            {
                return false;
            }
        }

        return true;
    }

    private void EnsureOpen()
    {
        if (_finished)
        {
            throw new EngineException(EngineErrorCode.FailedPrecondition, "the transaction has already committed or aborted");
        }
    }
}
