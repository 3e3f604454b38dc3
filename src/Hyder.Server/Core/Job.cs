using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Server.Core;

/// <summary>One ordinal on its way from the log reader through deserialization to the pipeline.</summary>
internal sealed class Job
{
    public long Ordinal;
    public long Position;
    public ReadOnlyMemory<byte> Final;
    public ReadOnlyMemory<byte>[] Parts = [];
    public long SnapshotSequence;

    /// <summary>This server's own transaction, when it ran here (its intention object is used as is).</summary>
    public PendingTransaction? Local;

    /// <summary>The intention to meld (decoded, or the local one).</summary>
    public Intention? Intention;

    /// <summary>True when the ordinal was decided before meld (<see cref="Decision"/>).</summary>
    public bool IsDecided;

    /// <summary>The decision made before meld: a committed no-op or an abort.</summary>
    public MeldOutcome Decision;

    /// <summary>A checkpoint barrier (a committed no-op ending a pair).</summary>
    public bool IsBarrier;

    /// <summary>The barrier's marker names this server's checkpoint request.</summary>
    public CheckpointRequest? Checkpoint;

    /// <summary>Set (volatile) by the deserializer once the job is ready for the pipeline.</summary>
    public bool Done;

    public static MeldOutcome Abort(AbortCause cause, string reason) => new() { Cause = cause, RejectReason = reason };

    public static MeldOutcome NoOp => new() { Committed = true };
}

/// <summary>A transaction of this server awaiting its outcome.</summary>
/// <remarks>
/// Threaded, the outcome's waiter continues on the thread pool, never on the final-meld thread; a
/// cooperative server (one thread) continues it inline, after the submit that melded it.
/// </remarks>
internal sealed class PendingTransaction(Intention intention, bool cooperative = false)
{
    public Intention Intention { get; } = intention;

    public long Ordinal;

    public TaskCompletionSource<MeldOutcome> Outcome { get; } = new(cooperative ? TaskCreationOptions.None : TaskCreationOptions.RunContinuationsAsynchronously);
}

/// <summary>A checkpoint this server asked for.</summary>
internal sealed class CheckpointRequest(ulong id, bool cooperative = false)
{
    public ulong Id { get; } = id;

    public TaskCompletionSource<long> Done { get; } = new(cooperative ? TaskCreationOptions.None : TaskCreationOptions.RunContinuationsAsynchronously);
}
