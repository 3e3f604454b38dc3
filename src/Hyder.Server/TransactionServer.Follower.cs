using Hyder.Server.Core;
using Hyder.Server.Follower;
using Hyder.Tree.Pipeline;

namespace Hyder.Server;

/// <summary>The server's side of its log follower (<see cref="IFollowerHost"/>): what the follower asks of the executor, the checkpoints and the trim.</summary>
public sealed partial class TransactionServer
{
    /// <summary>An executor appended an intention: a reader waiting at the tail reads it now.</summary>
    private void WakeReader() => _follower.Wake();

    PendingTransaction? IFollowerHost.TakeLocal(long nonce) => _localByNonce.TryRemove(nonce, out var local) ? local : null;

    void IFollowerHost.FileLocal(PendingTransaction local, long ordinal)
    {
        local.Ordinal = ordinal;
        ref var slot = ref _localByOrdinal[ordinal % _localByOrdinal.Length];
        if (slot is not null)
        {
            throw new InvalidOperationException($"the outcome slot of #{ordinal} is still taken by #{slot.Ordinal}");
        }

        Volatile.Write(ref slot, local);
    }

    CheckpointRequest? IFollowerHost.FindCheckpointRequest(ulong id) => _checkpointRequests.TryGetValue(id, out var request) ? request : null;

    void IFollowerHost.AskForCheckpointAgain(CheckpointRequest request) => _ = AppendMarkerAsync(request);

    void IFollowerHost.BarrierSubmitted(PipelineBarrier barrier, Job marker) => _ = WriteCheckpointAsync(barrier, marker);

    void IFollowerHost.CheckpointRead(long position, ReadOnlySpan<byte> block) => NoteCheckpoint(position, block);

    void IFollowerHost.SubmitReturned() => DeliverOutcomes();
}
