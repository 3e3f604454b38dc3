using System.Runtime.CompilerServices;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Memory;

namespace Hyder.Client.Tests;

/// <summary>
/// An <see cref="ITransactionEngine"/> over one in-process <see cref="Database"/>: every call into
/// the tree holds one lock, so interactive transactions begun concurrently interleave and meld
/// decides their conflicts for real. Tests can inject aborts, failures, an in-flight limit and a
/// gate that holds commits.
/// </summary>
internal sealed class FakeEngine : ITransactionEngine
{
    private readonly Lock _lock = new();
    private readonly Database _database = new();
    private readonly NodePool _pool = new(4096);
    private int _abortNext;
    private Hyder.Tree.Meld.AbortCause _abortCause;
    private Exception? _failNext;
    private int _inFlight;
    private int _peakInFlight;
    private long _committed;
    private long _aborted;

    public EngineLimits Limits { get; init; } = new() { MaxOperations = 64, MaxScanRows = 500, MaxMessageBytes = 256 * 1024 };

    /// <summary>Commits awaiting their outcome beyond this many are refused with ResourceExhausted.</summary>
    public int InFlightLimit { get; set; } = int.MaxValue;

    /// <summary>When set, writing commits wait for it (counted in flight) before they meld.</summary>
    public TaskCompletionSource? CommitGate { get; set; }

    /// <summary>When set, an interactive operation on <see cref="GatedKey"/> waits for it (after setting <see cref="GateReached"/>).</summary>
    public TaskCompletionSource? OperationGate { get; set; }

    /// <summary>The key whose interactive operations wait for <see cref="OperationGate"/>.</summary>
    public byte[] GatedKey { get; set; } = "gated"u8.ToArray();

    /// <summary>Set when an interactive operation reaches <see cref="OperationGate"/>.</summary>
    public TaskCompletionSource GateReached { get; } = new(TaskCreationOptions.RunContinuationsAsynchronously);

    public int Checkpoints { get; private set; }

    /// <summary>Writing commits awaiting their outcome now.</summary>
    public int InFlight => Volatile.Read(ref _inFlight);

    /// <summary>The most writing commits that awaited their outcome at once.</summary>
    public int PeakInFlight => Volatile.Read(ref _peakInFlight);

    public long Committed => Interlocked.Read(ref _committed);

    public long Aborted => Interlocked.Read(ref _aborted);

    /// <summary>Makes the next <paramref name="count"/> writing commits abort with <paramref name="cause"/>.</summary>
    public void AbortNext(int count, Hyder.Tree.Meld.AbortCause cause)
    {
        lock (_lock)
        {
            _abortNext = count;
            _abortCause = cause;
        }
    }

    /// <summary>Makes the next engine call throw <paramref name="exception"/>.</summary>
    public void FailNext(Exception exception) => Volatile.Write(ref _failNext, exception);

    /// <summary>Reads a key from the current state.</summary>
    public byte[]? Peek(byte[] key)
    {
        lock (_lock)
        {
            using var tx = _database.Begin(Hyder.Tree.IsolationLevel.ReadCommitted, _pool);
            return tx.TryGet(key, out var value) ? value : null;
        }
    }

    public async ValueTask<TransactionOutcome> ExecuteAsync(Hyder.Tree.IsolationLevel isolation, IReadOnlyList<Operation> operations, CancellationToken cancellationToken = default)
    {
        ThrowIfFailing();
        var tx = new FakeTransaction(this, isolation);
        try
        {
            var results = new OperationResult[operations.Count];
            for (var i = 0; i < results.Length; i++)
            {
                results[i] = tx.Execute(operations[i]);
            }

            var outcome = await tx.CommitAsync(cancellationToken);
            return outcome with { Results = outcome.Status == TransactionStatus.Committed ? results : [] };
        }
        finally
        {
            await tx.DisposeAsync();
        }
    }

    public IInteractiveTransaction Begin(Hyder.Tree.IsolationLevel isolation)
    {
        ThrowIfFailing();
        return new FakeTransaction(this, isolation);
    }

    public async IAsyncEnumerable<KeyValuePair<byte[], byte[]>> ScanAsync(byte[]? low, byte[]? high, int limit, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ThrowIfFailing();
        List<KeyValuePair<byte[], byte[]>> rows;
        lock (_lock)
        {
            using var tx = _database.Begin(Hyder.Tree.IsolationLevel.SnapshotIsolation, _pool);
            rows = ScanExclusive(tx, low, high, limit == 0 ? int.MaxValue - 1 : limit);
        }

        foreach (var row in rows)
        {
            cancellationToken.ThrowIfCancellationRequested();
            await Task.Yield();
            yield return row;
        }
    }

    public ValueTask<ClusterStatus> GetStatusAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfFailing();
        lock (_lock)
        {
            return ValueTask.FromResult(new ClusterStatus
            {
                ServerId = "fake-1",
                LastMelded = _database.LastAppended,
                CommittedSequence = _database.Current.Sequence,
                InFlight = Volatile.Read(ref _inFlight),
                Committed = Committed,
                Aborted = Aborted,
                Pipeline = "in-process",
                Peers = ["fake-2", "fake-3"],
            });
        }
    }

    public async ValueTask<StateHash> GetStateHashAsync(long atLeastOrdinal = 0, CancellationToken cancellationToken = default)
    {
        ThrowIfFailing();
        while (true)
        {
            lock (_lock)
            {
                if (_database.LastAppended >= atLeastOrdinal)
                {
                    var current = _database.Current;
                    return new StateHash(_database.LastAppended, current.Sequence, TreeInspector.StateHash(current.Root));
                }
            }

            await Task.Delay(10, cancellationToken);
        }
    }

    /// <summary>The non-zero <c>min_ordinal</c>s requests carried, in order (the service asks the engine only for those).</summary>
    public System.Collections.Concurrent.ConcurrentQueue<long> MinOrdinals { get; } = new();

    /// <summary>Everything appended is melded at once here: an ordinal beyond the last one is refused with Unavailable.</summary>
    public ValueTask WaitForMeldedAsync(long ordinal, CancellationToken cancellationToken = default)
    {
        ThrowIfFailing();
        MinOrdinals.Enqueue(ordinal);
        lock (_lock)
        {
            return _database.LastAppended >= ordinal
                ? default
                : throw new EngineException(EngineErrorCode.Unavailable, $"the fake engine has melded up to #{_database.LastAppended}, not #{ordinal}");
        }
    }

    public ValueTask<long> CheckpointAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfFailing();
        lock (_lock)
        {
            Checkpoints++;
            return ValueTask.FromResult(_database.LastAppended);
        }
    }

    private static List<KeyValuePair<byte[], byte[]>> ScanExclusive(Transaction tx, byte[]? low, byte[]? high, int limit)
    {
        var rows = new List<KeyValuePair<byte[], byte[]>>();
        tx.Scan(new KeyRange(low is { Length: > 0 } ? low : null, true, high, false), limit, rows);
        return rows;
    }

    private void ThrowIfFailing()
    {
        if (Interlocked.Exchange(ref _failNext, null) is { } e)
        {
            throw e;
        }
    }

    private sealed class FakeTransaction : IInteractiveTransaction
    {
        private readonly FakeEngine _engine;
        private readonly Transaction _tx;
        private bool _done;

        public FakeTransaction(FakeEngine engine, Hyder.Tree.IsolationLevel isolation)
        {
            _engine = engine;
            Isolation = isolation;
            lock (engine._lock)
            {
                _tx = engine._database.Begin(isolation, engine._pool);
                SnapshotSequence = _tx.Snapshot.Sequence;
            }
        }

        public long SnapshotSequence { get; }

        public Hyder.Tree.IsolationLevel Isolation { get; }

        public OperationResult Execute(Operation operation)
        {
            lock (_engine._lock)
            {
                if (_done)
                {
                    throw new EngineException(EngineErrorCode.FailedPrecondition, "the transaction has ended");
                }

                switch (operation.Kind)
                {
                    case OperationKind.Get:
                        return _tx.TryGet(operation.Key, out var value) ? new OperationResult(true, value) : OperationResult.NotFound;
                    case OperationKind.Put:
                        _tx.Put(operation.Key, operation.Value ?? []);
                        return OperationResult.Done;
                    case OperationKind.Delete:
                        return new OperationResult(_tx.Delete(operation.Key));
                    case OperationKind.Add:
                        _tx.Add(operation.Key, operation.Delta, operation.Min, operation.Max);
                        return OperationResult.Done;
                    case OperationKind.Max:
                        _tx.Max(operation.Key, operation.Delta);
                        return OperationResult.Done;
                    case OperationKind.Min:
                        _tx.Min(operation.Key, operation.Delta);
                        return OperationResult.Done;
                    case OperationKind.OPut:
                        _tx.OPut(operation.Key, operation.Order, operation.Value ?? []);
                        return OperationResult.Done;
                    case OperationKind.TopKInsert:
                        _tx.TopKInsert(operation.Key, operation.K, operation.Order, operation.Value ?? []);
                        return OperationResult.Done;
                    case OperationKind.Scan:
                        var limit = operation.Limit == 0 ? _engine.Limits.MaxScanRows : operation.Limit;
                        return new OperationResult(true, Rows: ScanExclusive(_tx, operation.Key, operation.End, limit));
                    default:
                        throw new EngineException(EngineErrorCode.InvalidArgument, $"unknown operation {operation.Kind}");
                }
            }
        }

        public async ValueTask<OperationResult> ExecuteAsync(Operation operation, CancellationToken cancellationToken = default)
        {
            if (_engine.OperationGate is { } gate && operation.Key.AsSpan().SequenceEqual(_engine.GatedKey))
            {
                _engine.GateReached.TrySetResult();
                await gate.Task.WaitAsync(cancellationToken);
            }

            return Execute(operation);
        }

        public async ValueTask<TransactionOutcome> CommitAsync(CancellationToken cancellationToken = default)
        {
            lock (_engine._lock)
            {
                if (_done)
                {
                    throw new EngineException(EngineErrorCode.FailedPrecondition, "the transaction has ended");
                }

                if (!_tx.HasWrites)
                {
                    _done = true;
                    _tx.Complete();
                    return new TransactionOutcome(TransactionStatus.Committed, Hyder.Tree.Meld.AbortCause.None, null, 0, SnapshotSequence, []);
                }
            }

            var inFlight = Interlocked.Increment(ref _engine._inFlight);
            for (var peak = Volatile.Read(ref _engine._peakInFlight); inFlight > peak; peak = Volatile.Read(ref _engine._peakInFlight))
            {
                Interlocked.CompareExchange(ref _engine._peakInFlight, inFlight, peak);
            }

            if (inFlight > _engine.InFlightLimit)
            {
                Interlocked.Decrement(ref _engine._inFlight);
                throw new EngineException(EngineErrorCode.ResourceExhausted, $"more than {_engine.InFlightLimit} transactions await their outcome");
            }

            try
            {
                if (_engine.CommitGate is { } gate)
                {
                    await gate.Task.WaitAsync(cancellationToken);
                }

                lock (_engine._lock)
                {
                    _done = true;
                    if (_engine._abortNext > 0)
                    {
                        _engine._abortNext--;
                        _tx.Dispose();
                        Interlocked.Increment(ref _engine._aborted);
                        return new TransactionOutcome(TransactionStatus.Aborted, _engine._abortCause, "injected by the test", 0, SnapshotSequence, []);
                    }

                    var outcome = _engine._database.Commit(_tx);
                    var ordinal = _engine._database.LastAppended;
                    if (outcome.Committed)
                    {
                        Interlocked.Increment(ref _engine._committed);
                        return new TransactionOutcome(TransactionStatus.Committed, Hyder.Tree.Meld.AbortCause.None, null, ordinal, SnapshotSequence, []);
                    }

                    Interlocked.Increment(ref _engine._aborted);
                    return new TransactionOutcome(TransactionStatus.Aborted, outcome.Cause, outcome.ToString(), ordinal, SnapshotSequence, []);
                }
            }
            finally
            {
                Interlocked.Decrement(ref _engine._inFlight);
            }
        }

        public void Abort()
        {
            lock (_engine._lock)
            {
                _done = true;
                _tx.Dispose();
            }
        }

        public ValueTask DisposeAsync()
        {
            Abort();
            return ValueTask.CompletedTask;
        }
    }
}
