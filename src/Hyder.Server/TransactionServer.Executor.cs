using System.Runtime.CompilerServices;
using Hyder.Log;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Tree;
using SplitKeyReadException = Hyder.Tree.Commutative.SplitKeyReadException;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Server;

/// <summary>The executor: transactions on the last committed state, their intentions into the log.</summary>
public sealed partial class TransactionServer
{
    /// <inheritdoc/>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<TransactionOutcome> ExecuteAsync(IsolationLevel isolation, IReadOnlyList<Operation> operations, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operations);
        ThrowIfStopping();
        RequestChecks.Validate(isolation, operations, Limits);
        var writes = false;
        foreach (var op in operations)
        {
            writes |= op.IsWrite;
        }

        if (writes)
        {
            await AdmitAsync(cancellationToken).ConfigureAwait(false);
        }

        var admitted = writes;
        DatabaseState? lease = null;
        try
        {
            Intention? intention;
            var results = new OperationResult[operations.Count];
            long snapshot;
            long? stashedAfter = null;
            while (true)
            {
                var pool = _executorPools.Rent();
                Transaction tx;
                try
                {
                    tx = stashedAfter is { } after ? await BeginReconciledAsync(isolation, after, pool, cancellationToken).ConfigureAwait(false) : BeginTransaction(isolation, pool);
                }
                catch
                {
                    _executorPools.Return(pool);
                    throw;
                }

                snapshot = tx.Snapshot.Sequence;
                var cpu = ServerMetrics.StartCpu(ExecutorStage.Execute);
                try
                {
                    for (var i = 0; i < results.Length; i++)
                    {
                        results[i] = Run(tx, operations[i], Limits);
                    }

                    if (_db.Values is not null && Lends(results))
                    {
                        // Recycled values are lent from the snapshot: the outcome holds it until disposed.
                        lease = tx.Snapshot;
                        lease.AddPin();
                    }

                    intention = tx.Complete();
                    _metrics.EndCpu(ExecutorStage.Execute, cpu);
                    break;
                }
                catch (SplitKeyReadException e)
                {
                    // Doppel's stash (docs/doppel.md): run again on the state after the next reconciliation.
                    _metrics.Add(Counter.Stashed);
                    stashedAfter = e.SnapshotSequence;
                }
                finally
                {
                    // Nothing else holds the transaction (its intention stands alone): it goes back for reuse.
                    tx.Dispose();
                    tx.Recycle();
                    _executorPools.Return(pool);
                }
            }

            if (intention is null)
            {
                _metrics.Add(Counter.ReadOnlyCommits);
                return Lent(new TransactionOutcome(TransactionStatus.Committed, AbortCause.None, null, 0, snapshot, results), ref lease);
            }

            admitted = false;
            var outcome = await AppendAndWaitAsync(intention, snapshot, results, cancellationToken).ConfigureAwait(false);
            return outcome.Results.Count == 0 ? outcome : Lent(outcome, ref lease);
        }
        finally
        {
            if (admitted)
            {
                _admission.Release();
            }

            // An outcome without results, or none at all (an exception): nothing is lent.
            lease?.Unpin();
        }
    }

    /// <summary>Hands the snapshot pin to the outcome, which releases it when disposed.</summary>
    private TransactionOutcome Lent(TransactionOutcome outcome, ref DatabaseState? lease)
    {
        if (lease is not null)
        {
            outcome.Holding(lease, Leases);
            lease = null;
        }

        return outcome;
    }

    /// <summary>True when a result carries a value or rows read from the snapshot.</summary>
    private static bool Lends(OperationResult[] results)
    {
        foreach (var r in results)
        {
            if (r.Value is { Length: > 0 } || r.Rows is { Count: > 0 })
            {
                return true;
            }
        }

        return false;
    }

    /// <inheritdoc/>
    public IInteractiveTransaction Begin(IsolationLevel isolation)
    {
        ThrowIfStopping();
        if (!Enum.IsDefined(isolation))
        {
            throw new EngineException(EngineErrorCode.InvalidArgument, $"unknown isolation level {(int)isolation}");
        }

        // An interactive transaction's operations arrive on any thread, one at a time: it rents a
        // pool of its own for its life.
        var pool = _executorPools.Rent();
        return new InteractiveTransaction(this, BeginTransaction(isolation, pool), pool);
    }

    /// <summary>Gives back a node pool an interactive transaction rented (<see cref="Begin"/>, a stash).</summary>
    internal void ReturnPool(NodePool pool) => _executorPools.Return(pool);

    /// <summary>Rents a node pool for an interactive transaction (a stash's fresh transaction).</summary>
    internal NodePool RentPool() => _executorPools.Rent();

    /// <summary>A transaction on the last committed state, running commutative operations as the cluster's settings say.</summary>
    internal Transaction BeginTransaction(IsolationLevel isolation, NodePool? pool)
    {
        var tx = _db.Begin(isolation, pool);
        tx.CommutativeMode = _commutativeMode;
        return tx;
    }

    /// <summary>
    /// A transaction on a reconciled state newer than state #<paramref name="after"/>, for one that
    /// had to leave a state inside a split phase (Doppel's stash, docs/doppel.md). Waits for the
    /// phase to end; when nothing ends it soon (a quiet log), appends a filler, which ends a phase.
    /// </summary>
    internal async ValueTask<Transaction> BeginReconciledAsync(IsolationLevel isolation, long after, NodePool? pool, CancellationToken cancellationToken)
    {
        var reconciled = _db.WhenReconciledAfter(after);
        if (!reconciled.IsCompleted)
        {
            // A stopping server reconciles nothing more: the wait ends with the stop.
            using var stopOrCaller = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stop.Token);
            try
            {
                var waited = await Task.WhenAny(reconciled, _cooperative ? Task.Delay(_options.FillerAfter, _time, CancellationToken.None) : Task.Delay(_options.FillerAfter, _time, stopOrCaller.Token)).ConfigureAwait(false);
                if (waited != reconciled)
                {
                    stopOrCaller.Token.ThrowIfCancellationRequested();
                    RequestPhaseEnd(after);
                }

                await (_cooperative ? reconciled : reconciled.WaitAsync(stopOrCaller.Token)).ConfigureAwait(false);
            }
            catch (OperationCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                ThrowIfStopping();
                throw;
            }
        }

        ThrowIfStopping();
        var state = _db.PinReconciled() ?? _db.PinCurrent();
        try
        {
            var tx = _db.BeginAt(state, isolation, pool);
            tx.CommutativeMode = _commutativeMode;
            return tx;
        }
        finally
        {
            _db.Release(state);
        }
    }

    /// <summary>Appends one filler per stashed state, so a quiet log still reaches the end of the split phase.</summary>
    private void RequestPhaseEnd(long after)
    {
        var previous = Volatile.Read(ref _phaseEndRequested);
        if (previous >= after || Interlocked.CompareExchange(ref _phaseEndRequested, after, previous) != previous)
        {
            return;
        }

        _metrics.Add(Counter.Fillers);
        _ = AppendFillerAsync();

        async Task AppendFillerAsync()
        {
            try
            {
                await _log.AppendAsync(Blocks.Control(Cluster.ControlKind.Filler, []), StopToken).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or SharedLogException)
            {
                // Stopping, or the log failed: the reader reports the failure; waiters see it as a stop.
            }
        }
    }

    /// <inheritdoc/>
    public async IAsyncEnumerable<KeyValuePair<byte[], byte[]>> ScanAsync(byte[]? low, byte[]? high, int limit, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        ThrowIfStopping();
        if (limit < 0)
        {
            throw new EngineException(EngineErrorCode.InvalidArgument, $"a scan limit cannot be negative ({limit})");
        }

        RequestChecks.Key(low ?? [], Limits, allowEmpty: true);
        RequestChecks.Key(high ?? [], Limits, allowEmpty: true);
        var state = _db.PinCurrent();
        try
        {
            const int Batch = 256;
            var remaining = limit == 0 ? long.MaxValue : limit;
            var rows = new List<KeyValuePair<byte[], byte[]>>(Batch);
            var range = new KeyRange(low is { Length: > 0 } ? low : null, true, high is { Length: > 0 } ? high : null, false);
            while (remaining > 0)
            {
                cancellationToken.ThrowIfCancellationRequested();
                rows.Clear();
                ScanBatch(state, range, (int)Math.Min(Batch, remaining), rows);
                foreach (var row in rows)
                {
                    yield return row;
                }

                remaining -= rows.Count;
                if (rows.Count < Batch)
                {
                    yield break;
                }

                // The next batch starts after the last key sent.
                range = new KeyRange(rows[^1].Key, false, range.High, false);
                if (!_cooperative)
                {
                    await Task.Yield();
                }
            }
        }
        finally
        {
            _db.Release(state);
        }
    }

    /// <summary>
    /// Rows of <paramref name="range"/> on a pinned state, read by a snapshot transaction (no read
    /// set). With recycled values the rows are copies: a scan's rows outlive its pin (a caller
    /// batches them past the end of the enumeration), and a scan is not the path values are saved on.
    /// </summary>
    private void ScanBatch(DatabaseState state, in KeyRange range, int limit, List<KeyValuePair<byte[], byte[]>> rows)
    {
        using var tx = _db.BeginAt(state, IsolationLevel.SnapshotIsolation);
        tx.Scan(range, limit, rows);
        if (_db.Values is not null)
        {
            for (var i = 0; i < rows.Count; i++)
            {
                rows[i] = new KeyValuePair<byte[], byte[]>(rows[i].Key, rows[i].Value.ToArray());
            }
        }
    }

    /// <summary>Admission control: a slot among <see cref="ServerOptions.MaxInFlight"/>, or ResourceExhausted after the timeout.</summary>
    /// <remarks>Cooperative mode refuses at once when no slot is free: a waiting <c>WaitAsync</c> continues on the thread pool.</remarks>
    internal async ValueTask AdmitAsync(CancellationToken cancellationToken)
    {
        if (!(_cooperative ? _admission.Wait(0, CancellationToken.None) : await _admission.WaitAsync(_options.AdmissionTimeout, cancellationToken).ConfigureAwait(false)))
        {
            _metrics.Add(Counter.Refused);
            throw new EngineException(
                EngineErrorCode.ResourceExhausted,
                $"server {_options.ServerId} has {_options.MaxInFlight} transactions awaiting their outcome; retry later");
        }
    }

    /// <summary>Serializes, appends, broadcasts, and waits for the local final meld's decision. Owns one admission slot.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    internal async ValueTask<TransactionOutcome> AppendAndWaitAsync(Intention intention, long snapshot, OperationResult[] results, CancellationToken cancellationToken)
    {
        PendingTransaction? pending = null;
        try
        {
            _options.IntentionBuilt?.Invoke(intention);
            var cpu = ServerMetrics.StartCpu(ExecutorStage.Validate);
            try
            {
                // Here, on the executor's thread, not on final meld's (DESIGN §6): an intention that
                // every server would reject when read from the log never reaches it.
                IntentionValidator.ValidateBeforeAppend(intention);
            }
            catch (IntentionRejectedException e)
            {
                intention.ReleasePins();
                _metrics.Add(Counter.RefusedIntentions);
                throw new EngineException(EngineErrorCode.InvalidArgument, e.Message);
            }

            _metrics.EndCpu(ExecutorStage.Validate, cpu);
            cpu = ServerMetrics.StartCpu(ExecutorStage.Encode);
            EncodedIntention encoded;
            try
            {
                encoded = IntentionEncoder.Encode(intention, _settings.BlockSize);
            }
            catch (IntentionFormatException e)
            {
                intention.ReleasePins();
                throw new EngineException(EngineErrorCode.InvalidArgument, $"the transaction's intention cannot be written: {e.Message}");
            }

            _metrics.EndCpu(ExecutorStage.Encode, cpu);
            pending = PendingTransaction.Rent(intention, _cooperative);
            _localByNonce[encoded.Nonce] = pending;
            long[] positions = encoded.Parts.Count == 0 ? [] : new long[encoded.Parts.Count];
            byte[]? rented = null;
            try
            {
                for (var i = 0; i < positions.Length; i++)
                {
                    positions[i] = await _log.AppendAsync(encoded.Parts[i], CancellationToken.None).ConfigureAwait(false);
                    _broadcast?.Publish(positions[i], encoded.Parts[i]);
                }

                // The final block in a pooled buffer: the log's append and the broadcast copy it
                // before they complete (LogClient.AppendAsync), so it goes back right after.
                var final = encoded.FinishPooled(positions, out rented);
                encoded.Release();
                var at = await _log.AppendAsync(final, CancellationToken.None).ConfigureAwait(false);
                WakeReader();
                _broadcast?.Publish(at, final);
            }
            catch (Exception e) when (e is not OperationCanceledException)
            {
                _metrics.Add(Counter.Unknown);
                return new TransactionOutcome(TransactionStatus.Unknown, AbortCause.None, $"appending the intention failed: {e.Message}", 0, snapshot, results);
            }
            finally
            {
                if (rented is not null)
                {
                    System.Buffers.ArrayPool<byte>.Shared.Return(rented);
                }
            }

            _metrics.Add(Counter.Appended);
            MeldOutcome outcome;
            long ordinal;
            try
            {
                outcome = await pending.WaitAsync(cancellationToken).ConfigureAwait(false);
            }
            catch (TaskCanceledException) when (!cancellationToken.IsCancellationRequested)
            {
                return new TransactionOutcome(TransactionStatus.Unknown, AbortCause.None, $"server {_options.ServerId} stopped before the outcome was known", pending.Ordinal, snapshot, results);
            }
            finally
            {
                cpu = ServerMetrics.StartCpu(ExecutorStage.Outcome);
                ordinal = pending.Ordinal;
                pending.ReleaseWaiter();
            }

            var answer = outcome.Committed
                ? new TransactionOutcome(TransactionStatus.Committed, AbortCause.None, null, ordinal, snapshot, results)
                : new TransactionOutcome(TransactionStatus.Aborted, outcome.Cause, Describe(outcome), ordinal, snapshot, []);
            _metrics.EndCpu(ExecutorStage.Outcome, cpu);
            return answer;
        }
        finally
        {
            _admission.Release();
        }
    }

    private static string Describe(in MeldOutcome o) => o.Cause switch
    {
        AbortCause.Rejected or AbortCause.SnapshotTooOld or AbortCause.SnapshotBeforeCheckpoint => o.RejectReason ?? o.Cause.ToString(),
        AbortCause.BoundViolated or AbortCause.TypeMismatch => $"{o.Cause} on key {Keys.Format(o.ConflictKey)} (conflict zone {o.ConflictZoneLength})",
        _ => o.ConflictKey is null ? $"{o.Cause} conflict" : $"{o.Cause} conflict on key {Keys.Format(o.ConflictKey)} (conflict zone {o.ConflictZoneLength})",
    };

    /// <summary>Runs one operation inside a transaction.</summary>
    internal static OperationResult Run(Transaction tx, Operation op, EngineLimits limits)
    {
        switch (op.Kind)
        {
            case OperationKind.Get:
                return tx.TryGet(op.Key, out var value) ? new OperationResult(true, value) : OperationResult.NotFound;
            case OperationKind.Put:
                tx.Put(op.Key, op.Value!);
                return OperationResult.Done;
            case OperationKind.Delete:
                return tx.Delete(op.Key) ? OperationResult.Done : OperationResult.NotFound;
            case OperationKind.Add:
                tx.Add(op.Key, op.Delta, op.Min, op.Max);
                return OperationResult.Done;
            case OperationKind.Max:
                tx.Max(op.Key, op.Delta);
                return OperationResult.Done;
            case OperationKind.Min:
                tx.Min(op.Key, op.Delta);
                return OperationResult.Done;
            case OperationKind.OPut:
                tx.OPut(op.Key, op.Order, op.Value!);
                return OperationResult.Done;
            case OperationKind.TopKInsert:
                tx.TopKInsert(op.Key, op.K, op.Order, op.Value!);
                return OperationResult.Done;
            default:
                var rows = new List<KeyValuePair<byte[], byte[]>>();
                tx.Scan(new KeyRange(op.Key.Length == 0 ? null : op.Key, true, op.End, false), op.Limit == 0 ? limits.MaxScanRows : op.Limit, rows);
                return new OperationResult(rows.Count > 0, null, rows);
        }
    }
}
