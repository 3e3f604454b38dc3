using Hyder.Server.Engine;
using Hyder.Tree;

namespace Hyder.Server.Core;

/// <summary>An interactive transaction of a <see cref="TransactionServer"/>: one operation at a time, then commit.</summary>
internal sealed class InteractiveTransaction(TransactionServer server, Transaction tx) : IInteractiveTransaction
{
    private readonly Lock _lock = new();
    private int _operations;
    private bool _finished;

    public long SnapshotSequence { get; } = tx.Snapshot.Sequence;

    public IsolationLevel Isolation => tx.Isolation;

    public OperationResult Execute(Operation operation)
    {
        RequestChecks.Operation(operation, server.Limits);
        lock (_lock)
        {
            EnsureOpen();
            if (++_operations > server.Limits.MaxOperations)
            {
                throw new EngineException(EngineErrorCode.InvalidArgument, $"more than {server.Limits.MaxOperations} operations in one transaction");
            }

            return TransactionServer.Run(tx, operation, server.Limits);
        }
    }

    public async ValueTask<TransactionOutcome> CommitAsync(CancellationToken cancellationToken = default)
    {
        Intention? intention;
        lock (_lock)
        {
            EnsureOpen();
            server.ThrowIfStopping();
            _finished = true;
            if (!tx.HasWrites)
            {
                tx.Complete();
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
            tx.Dispose();
            throw;
        }

        intention = tx.Complete();
        return await server.AppendAndWaitAsync(intention!, SnapshotSequence, [], cancellationToken).ConfigureAwait(false);
    }

    public void Abort()
    {
        lock (_lock)
        {
            if (!_finished)
            {
                _finished = true;
                tx.Dispose();
            }
        }
    }

    public ValueTask DisposeAsync()
    {
        Abort();
        return ValueTask.CompletedTask;
    }

    private void EnsureOpen()
    {
        if (_finished)
        {
            throw new EngineException(EngineErrorCode.FailedPrecondition, "the transaction has already committed or aborted");
        }
    }
}
