using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Pipeline;

namespace Hyder.Server;

/// <summary>Checkpoints (meld paper App. A), status and state hashes.</summary>
public sealed partial class TransactionServer
{
    /// <inheritdoc/>
    public async ValueTask<long> CheckpointAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfStopping();
        var request = new CheckpointRequest((ulong)Random.Shared.NextInt64() | 1, _cooperative);
        _checkpointRequests[request.Id] = request;
        try
        {
            await AppendMarkerAsync(request).ConfigureAwait(false);
            return await request.Done.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
        }
        finally
        {
            _checkpointRequests.TryRemove(request.Id, out _);
        }
    }

    private async Task AppendMarkerAsync(CheckpointRequest request)
    {
        try
        {
            await _log.AppendAsync(Blocks.Control(ControlKind.CheckpointMarker, BitConverter.GetBytes(request.Id)), StopToken).ConfigureAwait(false);
        }
        catch (Exception e)
        {
            request.Done.TrySetException(e);
        }
    }

    /// <summary>
    /// After a barrier: every server lets go of the barrier's state once its stages passed it; the
    /// server that asked for the checkpoint first writes the state there, with every stage's
    /// ephemeral sequence, into the log.
    /// </summary>
    private async Task WriteCheckpointAsync(PipelineBarrier barrier, Job marker)
    {
        try
        {
            var sequences = await barrier.Sequences.WaitAsync(StopToken).ConfigureAwait(false);
            if (marker.Checkpoint is not { } request)
            {
                return;
            }

            var state = barrier.State!;
            var info = new CheckpointInfo(barrier.Ordinal, state.Sequence, marker.Position + 1, sequences) { SplitKeys = state.FollowingSplitKeys?.Items ?? [], Settings = _settings.Encode() };
            var (at, blocks) = _cooperative
                ? await AppendCheckpointAsync(state, info).ConfigureAwait(false)
                : await Task.Run(() => AppendCheckpointAsync(state, info)).ConfigureAwait(false);
            _metrics.Add(Counter.Checkpoints);
            _logger.CheckpointWritten(_options.ServerId, barrier.Ordinal, at, blocks);
            request.Done.TrySetResult(barrier.Ordinal);
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            _logger.CheckpointFailed(e, _options.ServerId, barrier.Ordinal);
            marker.Checkpoint?.Done.TrySetException(e);
        }
        catch (OperationCanceledException)
        {
        }
        finally
        {
            barrier.Release();
        }
    }

    /// <summary>
    /// Appends a flush intention (meld paper §5): a read-committed transaction that copies the
    /// paths to up to <see cref="ServerOptions.FlushMaxNodes"/> ephemeral nodes of the current
    /// state, breadth first from the root, without changing any content. It reads and writes
    /// nothing, so it conflicts with nothing; once melded, the copies (which the log holds)
    /// replace the ephemeral nodes. Returns the number of ephemeral nodes it copied (0: none found).
    /// </summary>
    public async Task<int> FlushAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfStopping();
        var state = _db.PinCurrent();
        List<byte[]> keys;
        try
        {
            keys = EphemeralKeys(state.Root, _options.FlushMaxNodes, _options.FlushScanBudget);
        }
        finally
        {
            _db.Release(state);
        }

        if (keys.Count == 0)
        {
            return 0;
        }

        await AdmitAsync(cancellationToken).ConfigureAwait(false);
        Tree.Intention? intention;
        long snapshot;
        // An executor's node pool, joined to final meld's exchange: the maintenance loop runs on
        // any thread-pool thread, whose own NodePool.Current would be a fresh 64 Ki-node pool
        // that nothing refills.
        var pool = _executorPools.Rent();
        var tx = _db.Begin(IsolationLevel.ReadCommitted, pool);
        try
        {
            snapshot = tx.Snapshot.Sequence;
            foreach (var key in keys)
            {
                tx.Flush(key);
            }

            intention = tx.Complete();
        }
        catch
        {
            tx.Dispose();
            _admission.Release();
            throw;
        }
        finally
        {
            _executorPools.Return(pool);
        }

        if (intention is null)
        {
            _admission.Release();
            return 0;
        }

        var outcome = await AppendAndWaitAsync(intention, snapshot, [], cancellationToken).ConfigureAwait(false);
        if (outcome.Status == TransactionStatus.Committed)
        {
            _metrics.Add(Counter.Flushes);
            _metrics.Add(Counter.FlushedNodes, keys.Count);
        }

        return keys.Count;
    }

    /// <summary>Keys of ephemeral nodes, breadth first from the root, within a visiting budget.</summary>
    internal static List<byte[]> EphemeralKeys(Node? root, int max, int budget)
    {
        var keys = new List<byte[]>();
        var queue = new Queue<Node>();
        if (root is not null)
        {
            queue.Enqueue(root);
        }

        while (queue.Count > 0 && keys.Count < max && budget-- > 0)
        {
            var n = queue.Dequeue();
            if (n.Vn.IsEphemeral)
            {
                keys.Add(n.Key);
            }

            if (n.Left is { } l)
            {
                queue.Enqueue(l);
            }

            if (n.Right is { } r)
            {
                queue.Enqueue(r);
            }
        }

        return keys;
    }

    /// <summary>
    /// Flushes every <see cref="ServerOptions.FlushEvery"/> ordinals and checkpoints every
    /// <see cref="ServerOptions.CheckpointEvery"/> ordinals, in the background.
    /// </summary>
    private async Task MaintenanceLoopAsync()
    {
        var flushEvery = _options.FlushEvery;
        var checkpointEvery = _options.CheckpointEvery;
        var nextFlush = flushEvery > 0 ? _pipeline.LastMelded + flushEvery : long.MaxValue;
        var nextCheckpoint = checkpointEvery > 0 ? _pipeline.LastMelded + checkpointEvery : long.MaxValue;
        var ct = _stop.Token;
        try
        {
            // A server that stopped serving (its reader failed) stops maintaining too.
            while (!ct.IsCancellationRequested && Failure is null)
            {
                await PauseAsync(50, ct).ConfigureAwait(false);
                var melded = _pipeline.LastMelded;
                try
                {
                    if (melded >= nextFlush)
                    {
                        nextFlush = melded + flushEvery;
                        await FlushAsync(StopToken).ConfigureAwait(false);
                    }

                    if (melded >= nextCheckpoint)
                    {
                        nextCheckpoint = melded + checkpointEvery;
                        await CheckpointAsync(StopToken).ConfigureAwait(false);
                    }
                }
                catch (EngineException)
                {
                    // Busy (admission) or stopping: the next period tries again.
                }
            }
        }
        catch (OperationCanceledException)
        {
        }
    }

    /// <inheritdoc/>
    public ValueTask<ClusterStatus> GetStatusAsync(CancellationToken cancellationToken = default)
    {
        var current = _db.Current;
        return ValueTask.FromResult(new ClusterStatus
        {
            ServerId = _options.ServerId,
            LastMelded = _pipeline.LastMelded,
            CommittedSequence = current.Sequence,
            InFlight = InFlight,
            Committed = _metrics.Commits,
            Aborted = _metrics.Aborts,
            Pipeline = _settings.ToString(),
        });
    }

    /// <inheritdoc/>
    public async ValueTask<StateHash> GetStateHashAsync(long atLeastOrdinal = 0, CancellationToken cancellationToken = default)
    {
        if (!_cooperative && _ordinalWaiters.Reached < atLeastOrdinal)
        {
            // No limit of the server's own: the caller's deadline ends the wait.
            ThrowIfStopping();
            await WaitForMeldedSlowAsync(atLeastOrdinal, Timeout.InfiniteTimeSpan, cancellationToken).ConfigureAwait(false);
        }

        while (_pipeline.LastMelded < atLeastOrdinal)
        {
            ThrowIfStopping();
            await PauseAsync(1, cancellationToken).ConfigureAwait(false);
        }

        var ordinal = _pipeline.LastMelded;
        var state = _db.PinCurrent();
        try
        {
            var hash = _cooperative
                ? TreeInspector.StateHash(state.Root)
                : await Task.Run(() => TreeInspector.StateHash(state.Root), cancellationToken).ConfigureAwait(false);
            return new StateHash(ordinal, state.Sequence, hash);
        }
        finally
        {
            _db.Release(state);
        }
    }
}
