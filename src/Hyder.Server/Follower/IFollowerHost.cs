using Hyder.Server.Core;
using Hyder.Tree.Pipeline;

namespace Hyder.Server.Follower;

/// <summary>
/// What the log follower asks of the server it feeds: this server's own transactions (found by
/// nonce, filed by ordinal for final meld's delivery), its checkpoint requests, the trim rule's
/// checkpoint list, and, in cooperative mode, the outcomes to deliver after each submit. Everything
/// else the follower decides from the log alone.
/// </summary>
/// <remarks>Called on the reader (<see cref="TakeLocal"/>, the checkpoint calls) and on the submitter
/// (<see cref="FileLocal"/>, <see cref="BarrierSubmitted"/>); in cooperative mode all on the one thread.</remarks>
internal interface IFollowerHost
{
    /// <summary>Transactions of this server awaiting their outcome: while any, the reader looks at the tail often and fills a waiting pair.</summary>
    int InFlight { get; }

    /// <summary>This server's transaction whose intention has <paramref name="nonce"/>, taken out of the executor's table; null for a peer's.</summary>
    PendingTransaction? TakeLocal(long nonce);

    /// <summary>The submitter hands this server's transaction its ordinal, so final meld delivers its outcome.</summary>
    void FileLocal(PendingTransaction local, long ordinal);

    /// <summary>The checkpoint request of this server that a marker names (null: a peer's, or one that ended).</summary>
    CheckpointRequest? FindCheckpointRequest(ulong id);

    /// <summary>The marker of <paramref name="request"/> landed on the first ordinal of a pair, which ends no pair: the server asks again.</summary>
    void AskForCheckpointAgain(CheckpointRequest request);

    /// <summary>A checkpoint barrier entered the pipeline: the server lets go of its state, and writes the checkpoint if it asked for it.</summary>
    void BarrierSubmitted(PipelineBarrier barrier, Job marker);

    /// <summary>The reader passed a checkpoint's final block at <paramref name="position"/> (the trim rule counts it).</summary>
    void CheckpointRead(long position, ReadOnlySpan<byte> block);

    /// <summary>Cooperative mode: a submit returned; the outcomes final meld reached during it are delivered now.</summary>
    void SubmitReturned();
}
