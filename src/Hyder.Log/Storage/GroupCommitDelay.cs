namespace Hyder.Log.Storage;

/// <summary>
/// When group commit waits for more writes before an fsync (<see cref="Units.LogUnitOptions.CommitDelay"/>):
/// for <see cref="Wait"/>, when the previous flush covered at least <see cref="Siblings"/> slots
/// and at least <see cref="QueuedWork"/> work items wait in this process's thread pool. Queued
/// work means the CPU is the bottleneck: the fsync the wait saves gives CPU back to that work,
/// and the writers it holds back would be waiting for a core anyway. Without queued work (a
/// lightly loaded server, a log host with cores to spare) the wait would only add latency.
/// The default value waits never.
/// </summary>
/// <param name="Wait">How long the flusher sleeps before it takes the slots appended so far.</param>
/// <param name="Siblings">Slots the previous flush must have covered.</param>
/// <param name="QueuedWork">Thread-pool work items that must be waiting (0: not checked).</param>
internal readonly record struct GroupCommitDelay(TimeSpan Wait, int Siblings, int QueuedWork = GroupCommitDelay.DefaultQueuedWork)
{
    /// <summary>The default <see cref="QueuedWork"/>.</summary>
    public const int DefaultQueuedWork = 4;

    /// <summary>Whether a flush after one that covered <paramref name="lastBatch"/> slots waits.</summary>
    public bool Applies(long lastBatch) =>
        Wait > TimeSpan.Zero && lastBatch >= Siblings && (QueuedWork <= 0 || ThreadPool.PendingWorkItemCount >= QueuedWork);
}
