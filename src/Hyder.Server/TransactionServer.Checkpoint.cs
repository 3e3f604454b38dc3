using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Tree.Pipeline;
using Hyder.Tree;

namespace Hyder.Server;

/// <summary>Checkpoints (meld paper App. A), status and state hashes.</summary>
public sealed partial class TransactionServer
{
    /// <inheritdoc/>
    public async ValueTask<long> CheckpointAsync(CancellationToken cancellationToken = default)
    {
        ThrowIfStopping();
        var request = new CheckpointRequest((ulong)Random.Shared.NextInt64() | 1);
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
            await _log.AppendAsync(Blocks.Control(ControlKind.CheckpointMarker, BitConverter.GetBytes(request.Id)), _stop.Token).ConfigureAwait(false);
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
            var sequences = await barrier.Sequences.WaitAsync(_stop.Token).ConfigureAwait(false);
            if (marker.Checkpoint is not { } request)
            {
                return;
            }

            var state = barrier.State!;
            var info = new CheckpointInfo(barrier.Ordinal, state.Sequence, marker.Position + 1, sequences);
            var encoded = await Task.Run(() => Blocks.EncodeCheckpoint(state, info.Encode(), _settings.BlockSize)).ConfigureAwait(false);
            var positions = new long[encoded.Parts.Count];
            for (var i = 0; i < positions.Length; i++)
            {
                positions[i] = await _log.AppendAsync(encoded.Parts[i], _stop.Token).ConfigureAwait(false);
            }

            var at = await _log.AppendAsync(encoded.Finish(positions), _stop.Token).ConfigureAwait(false);
            _metrics.Checkpoints++;
            _logger.CheckpointWritten(_options.ServerId, barrier.Ordinal, at, positions.Length + 1);
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
        while (_pipeline.LastMelded < atLeastOrdinal)
        {
            ThrowIfStopping();
            await Task.Delay(1, cancellationToken).ConfigureAwait(false);
        }

        var ordinal = _pipeline.LastMelded;
        var state = _db.PinCurrent();
        try
        {
            var hash = await Task.Run(() => TreeInspector.StateHash(state.Root), cancellationToken).ConfigureAwait(false);
            return new StateHash(ordinal, state.Sequence, hash);
        }
        finally
        {
            _db.Release(state);
        }
    }
}
