using Hyder.Doppel;
using Xunit;

namespace Hyder.Tree.Tests.Commutative;

/// <summary>
/// Waiting for the next reconciled state (Doppel's stash, docs/doppel.md): a cooperative server
/// runs on one thread (docs/simulation.md), so with <see cref="Database.DeferReconciledWaiters"/> a
/// waiter continues only when the server releases it (after the submit that ended the phase, never
/// inside a stage step), inline on that thread, and never on the thread pool (the simulation found
/// a stashed read continuing there: "posted from another thread").
/// </summary>
public sealed class ReconciledSignalTests
{
    private static readonly byte[] s_counter = [0x63];

    [Fact]
    public void WithDeferredWaitersAWaiterForTheReconciledStateContinuesInlineWhenReleased()
    {
        Assert.False(new Database().DeferReconciledWaiters);
        var db = new Database { DeferReconciledWaiters = true };
        db.SplitPhases = new SplitPhaseTable(new SplitPhaseOptions { PhaseLength = 2, LabelledKeys = [s_counter] });
        Add(db, 5);
        Assert.NotNull(db.Current.SplitKeys);
        var wait = db.WhenReconciledAfter(db.Current.Sequence);
        Assert.False(wait.IsCompleted);

        var publisher = Environment.CurrentManagedThreadId;
        int? continuedOn = null;
        DatabaseState? currentThen = null;
        var continued = wait.ContinueWith(
            _ =>
            {
                continuedOn = Environment.CurrentManagedThreadId;
                currentThen = db.Current;
            },
            CancellationToken.None,
            TaskContinuationOptions.ExecuteSynchronously,
            TaskScheduler.Default);

        // The second ordinal ends the phase: the counter is reconciled into the tree.
        Add(db, 7);
        Assert.True(db.Current.IsReconciled);
        Assert.False(continued.IsCompleted, "final meld released the waiter itself");
        db.ReleaseReconciledWaiters();
        Assert.True(continued.IsCompleted, "the waiter did not continue inline");
        Assert.Equal(publisher, continuedOn);
        Assert.Same(db.Reconciled, currentThen);
        Assert.Equal(12, BitConverter.ToInt64(Keys.Find(currentThen!.Root, s_counter)!.Payload));
    }

    [Fact]
    public void SeveralWaitersOnOneReconciledStateAllContinueInlineInTheOrderTheyWaited()
    {
        // Three transactions stashed on one phase await the same state. A task several await runs
        // one awaiter inline when it completes and queues the others to the thread pool; each
        // waiter therefore gets a task of its own (the simulation, seeds 60 and 3076 with split
        // phases: "posted from another thread").
        var db = new Database { DeferReconciledWaiters = true };
        db.SplitPhases = new SplitPhaseTable(new SplitPhaseOptions { PhaseLength = 2, LabelledKeys = [s_counter] });
        Add(db, 5);
        var sequence = db.Current.Sequence;
        var publisher = Environment.CurrentManagedThreadId;
        var continued = new List<(int Waiter, int Thread)>();
        async Task WaitAsync(int waiter)
        {
            await db.WhenReconciledAfter(sequence).ConfigureAwait(false);
            continued.Add((waiter, Environment.CurrentManagedThreadId));
        }

        // As on the simulation's thread, no synchronization context (xunit's would keep any await
        // continuation from running inline).
        var context = SynchronizationContext.Current;
        SynchronizationContext.SetSynchronizationContext(null);
        try
        {
            Task[] waiters = [WaitAsync(0), WaitAsync(1), WaitAsync(2)];
            Assert.DoesNotContain(waiters, w => w.IsCompleted);

            Add(db, 7);
            Assert.True(db.Current.IsReconciled, "the phase did not end");
            db.ReleaseReconciledWaiters();
            Assert.All(waiters, w => Assert.True(w.IsCompletedSuccessfully, "a waiter did not continue inline"));
            Assert.Equal([(0, publisher), (1, publisher), (2, publisher)], continued);
        }
        finally
        {
            SynchronizationContext.SetSynchronizationContext(context);
        }
    }

    private static void Add(Database db, long delta)
    {
        using var tx = db.Begin();
        tx.Add(s_counter, delta);
        Assert.True(db.Commit(tx).Committed);
    }
}
