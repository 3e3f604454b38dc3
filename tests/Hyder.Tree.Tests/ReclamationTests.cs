using Hyder.Tree.Memory;
using Xunit;
using static Hyder.Tree.Tests.TestData;

namespace Hyder.Tree.Tests;

public sealed class ReclamationTests
{
    private static void UpdateRandomKeys(Database db, Random rng, int transactions, int keys)
    {
        for (var t = 0; t < transactions; t++)
        {
            var tx = db.Begin();
            tx.TryGet(K($"k{rng.Next(keys):D5}"), out _);
            tx.Put(K($"k{rng.Next(keys):D5}"), K($"v{t}"));
            db.Commit(tx);
        }
    }

    [Fact]
    public void DisplacedNodesGoBackToTheMeldPoolAndOldStatesAreDropped()
    {
        var db = Load([.. Enumerable.Range(0, 1000).Select(i => $"k{i:D5}")]);
        UpdateRandomKeys(db, new Random(1), 2000, 1000);
        Assert.Equal(1, db.RetainedStates);
        Assert.True(db.MeldPool.Returned > 2000 * 10, $"only {db.MeldPool.Returned} nodes came back");
        TreeInspector.ValidateState(db.Current.Root);
    }

    [Fact]
    public void APinnedStateKeepsEveryNodeItReachesUntilReleased()
    {
        var db = Load([.. Enumerable.Range(0, 500).Select(i => $"k{i:D5}")]);
        var pinned = db.PinCurrent();
        var hash = TreeInspector.StateHash(pinned.Root);
        var contents = Contents(pinned);
        var rng = new Random(2);

        // Concurrent transactions on the pinned state make ephemeral nodes and graft old ones.
        for (var t = 0; t < 1500; t++)
        {
            var tx = rng.Next(3) == 0 ? db.BeginAt(pinned) : db.Begin();
            tx.Put(K($"k{rng.Next(600):D5}"), K($"v{t}"));
            if (rng.Next(4) == 0)
            {
                tx.Delete(K($"k{rng.Next(600):D5}"));
            }

            db.Commit(tx);
        }

        Assert.True(db.RetainedStates > 100);
        Assert.Equal(hash, TreeInspector.StateHash(pinned.Root));
        Assert.Equal(contents, Contents(pinned));
        TreeInspector.ValidateState(pinned.Root);

        db.Release(pinned);
        UpdateRandomKeys(db, rng, 1, 500);
        Assert.Equal(1, db.RetainedStates);
        TreeInspector.ValidateState(db.Current.Root);
    }

    [Fact]
    public void TheMeldPoolStopsAllocatingInSteadyState()
    {
        var db = Load([.. Enumerable.Range(0, 2000).Select(i => $"k{i:D5}")]);
        var rng = new Random(3);
        UpdateRandomKeys(db, rng, 3000, 2000);
        var allocated = db.MeldPool.Allocated;
        UpdateRandomKeys(db, rng, 3000, 2000);
        Assert.Equal(allocated, db.MeldPool.Allocated);
    }

    [Fact]
    public void ReturningANodeTwiceIsCaught()
    {
        var pool = new NodePool(8);
        var n = pool.Rent();
        pool.Return(n);
        Assert.Throws<InvariantViolationException>(() => pool.Return(n));
    }

    [Fact]
    public void NodesAThreadFreesReachTheThreadThatMakesThemInBatches()
    {
        var exchange = new NodeExchange();
        var maker = new NodePool(NodeExchange.Reserve * 4, exchange);
        var freer = new NodePool(NodeExchange.Reserve * 4, exchange);
        for (var round = 0; round < 20; round++)
        {
            var made = Enumerable.Range(0, 600).Select(_ => maker.Rent()).ToList();
            made.ForEach(freer.Return);
        }

        // The maker allocated only until the freer's reserve filled; then it ran on batches.
        Assert.True(maker.Allocated < 600 * 4, $"the maker allocated {maker.Allocated} nodes over 12,000 rents");
        Assert.True(maker.Taken > 0 && freer.Given > 0);
        Assert.Equal(0, freer.Dropped);
        Assert.True(freer.Count <= NodeExchange.Reserve + NodeExchange.BatchSize);
    }

    [Fact]
    public void AFullPoolLeavesExtraNodesToTheCollector()
    {
        var pool = new NodePool(2);
        var nodes = Enumerable.Range(0, 5).Select(_ => pool.Rent()).ToList();
        nodes.ForEach(pool.Return);
        Assert.Equal(2, pool.Count);
        Assert.Equal(3, pool.Dropped);
    }
}
