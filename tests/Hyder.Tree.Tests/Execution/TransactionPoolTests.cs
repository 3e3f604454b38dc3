using Xunit;

namespace Hyder.Tree.Tests.Execution;

/// <summary>Runs alone: the pool is shared by the process, and another test's <c>Begin</c> could take a transaction these tests recycled.</summary>
[CollectionDefinition(nameof(TransactionPoolTests), DisableParallelization = true)]
public sealed class TransactionPoolCollection;

/// <summary>Finished transactions go back to a pool (<see cref="Transaction.Recycle"/>) and come back reset.</summary>
[Collection(nameof(TransactionPoolTests))]
public sealed class TransactionPoolTests
{
    private static Database Loaded()
    {
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(0, 100).Select(k => new KeyValuePair<byte[], byte[]>([(byte)k], [(byte)k]))]);
        return db;
    }

    [Fact]
    public void ARecycledTransactionComesBackResetOnANewSnapshot()
    {
        var db = Loaded();
        var first = db.Begin();
        first.TryGet([3], out _);
        first.Put([4], [44]);
        first.Delete([5]);
        first.CommutativeMode = Hyder.Tree.Commutative.CommutativeMode.ReadModifyWrite;
        Assert.NotNull(first.Complete());
        first.Recycle();

        // Earlier tests may have left transactions in the pool: take them until this one comes back.
        Transaction? again = null;
        var taken = new List<Transaction>();
        for (var i = 0; i < 4 * Transaction.MaxPooled && again is null; i++)
        {
            var tx = db.Begin(IsolationLevel.SnapshotIsolation);
            if (ReferenceEquals(tx, first))
            {
                again = tx;
            }
            else
            {
                taken.Add(tx);
            }
        }

        foreach (var tx in taken)
        {
            tx.Dispose();
        }

        Assert.NotNull(again);
        Assert.False(again.HasWrites);
        Assert.Equal(IsolationLevel.SnapshotIsolation, again.Isolation);
        Assert.Equal(default, again.CommutativeMode);
        Assert.Same(db.Current, again.Snapshot);

        // Nothing of the first transaction's work is left: key 5 is there, its write to 4 is not.
        Assert.True(again.TryGet([5], out var five));
        Assert.Equal([5], five);
        Assert.True(again.TryGet([4], out var four));
        Assert.Equal([4], four);
        again.Put([6], [66]);
        var intention = again.Complete()!;
        Assert.Empty(intention.Deletes);
        Assert.Empty(intention.RootRanges);

        // The validator's prefetch list names this transaction's nodes only, none of the first's.
        Assert.NotEmpty(intention.MadeNodes.ToArray());
        Assert.All(intention.MadeNodes.ToArray(), n => Assert.Equal(intention.ExecutorToken, n.Owner));
        again.Dispose();
    }

    [Fact]
    public void RecyclingTwiceThrowsAndARecycledTransactionRefusesWork()
    {
        var db = Loaded();
        var tx = db.Begin();
        tx.Put([1], [2]);
        tx.Dispose();
        tx.Recycle();
        Assert.Throws<InvariantViolationException>(tx.Recycle);
        Assert.Throws<InvalidOperationException>(() => tx.Put([1], [3]));
        Assert.Null(tx.Snapshot);
    }

    [Fact]
    public void ARunningTransactionCannotBeRecycled()
    {
        var db = Loaded();
        using var tx = db.Begin();
        Assert.Throws<InvalidOperationException>(tx.Recycle);
    }
}
