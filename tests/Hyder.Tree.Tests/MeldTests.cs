using Hyder.Tree.Meld;
using Xunit;
using static Hyder.Tree.Tests.ExecutorTests;
using static Hyder.Tree.Tests.TestData;

namespace Hyder.Tree.Tests;

/// <summary>Hand-written cases: the papers' examples and the traps DESIGN §12 lists.</summary>
public sealed class MeldTests
{
    [Fact]
    public void PaperFigureFourInsertsOnBothSidesBothCommit()
    {
        // Meld paper Fig. 4-6: T1 inserts B..E; T2 inserts A and T3 inserts F, both on T1's output.
        var db = new Database();
        var t1 = db.Begin();
        foreach (var k in new[] { "D", "B", "E", "C" })
        {
            t1.Put(K(k), K(k.ToLowerInvariant()));
        }

        Assert.True(db.Commit(t1).Serial);
        var s1 = db.PinCurrent();
        var t2 = db.BeginAt(s1);
        t2.Put(K("A"), K("a"));
        var t3 = db.BeginAt(s1);
        t3.Put(K("F"), K("f"));
        var o2 = db.Commit(t2);
        var o3 = db.Commit(t3);
        db.Release(s1);

        Assert.True(o2.Committed && o2.Serial);
        Assert.True(o3.Committed);
        Assert.False(o3.Serial);
        Assert.True(o3.EphemeralNodesCreated > 0);
        Assert.Equal(1, o3.ConflictZoneLength);
        Assert.Equal("A=a,B=b,C=c,D=d,E=e,F=f", Contents(db.Current));
    }

    [Fact]
    public void ConcurrentUpdatesOfOneKeyAbortTheLaterWithWriteWriteOnThatKey()
    {
        var db = Load("a", "b", "c");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s, IsolationLevel.SnapshotIsolation);
        t1.Put(K("b"), K("1"));
        var t2 = db.BeginAt(s, IsolationLevel.SnapshotIsolation);
        t2.Put(K("b"), K("2"));
        Assert.True(db.Commit(t1).Committed);
        var o = db.Commit(t2);
        db.Release(s);
        Assert.False(o.Committed);
        Assert.Equal(AbortCause.WriteWrite, o.Cause);
        Assert.Equal("b", S(o.ConflictKey!));
        Assert.Equal("a=a0,b=1,c=c0", Contents(db.Current));
    }

    [Fact]
    public void WriteSkewCommitsUnderSnapshotIsolationAndAbortsUnderSerializable()
    {
        foreach (var (level, expectCommit) in new[] { (IsolationLevel.SnapshotIsolation, true), (IsolationLevel.Serializable, false) })
        {
            var db = Load("x", "y");
            var s = db.PinCurrent();
            var t1 = db.BeginAt(s, level);
            t1.TryGet(K("y"), out _);
            t1.Put(K("x"), K("1"));
            var t2 = db.BeginAt(s, level);
            t2.TryGet(K("x"), out _);
            t2.Put(K("y"), K("2"));
            Assert.True(db.Commit(t1).Committed);
            var o = db.Commit(t2);
            db.Release(s);
            Assert.Equal(expectCommit, o.Committed);
            if (!expectCommit)
            {
                Assert.Equal(AbortCause.ReadWrite, o.Cause);
            }
        }
    }

    [Fact]
    public void APayloadChangedEarlierInTheZoneAndCopiedAgainIsStillAConflict()
    {
        // DESIGN §12, first trap: T1 changes p's payload; T2 (serial after T1) copies p only
        // because it writes a descendant, so p's copy has Altered = false. A reader of p on the
        // original snapshot must still abort: versions (SCV vs NCV), not flags, decide.
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var s0 = db.PinCurrent();
        var root = S(db.Current.Root!.Key);
        var reader = db.BeginAt(s0);
        reader.TryGet(K(root), out _);
        reader.Put(K("zz"), K("r"));

        var t1 = db.Begin();
        t1.Put(K(root), K("changed"));
        Assert.True(db.Commit(t1).Committed);
        var t2 = db.Begin();
        t2.Put(K("g"), K("g2"));
        Assert.True(db.Commit(t2).Serial);
        Assert.False(Find(db.Current.Root, root)!.Altered);

        var o = db.Commit(reader);
        db.Release(s0);
        Assert.False(o.Committed);
        Assert.Equal(AbortCause.ReadWrite, o.Cause);
        Assert.Equal(root, S(o.ConflictKey!));
    }

    [Fact]
    public void AnInsertIntoAScannedRangeIsAPhantomAndOneOutsideItIsNot()
    {
        foreach (var (inserted, expectCommit) in new[] { ("c5", false), ("e5", true) })
        {
            var db = Load("a", "b", "c", "d", "e", "f", "g", "h");
            var s = db.PinCurrent();
            var scanner = db.BeginAt(s);
            var rows = new List<KeyValuePair<byte[], byte[]>>();
            scanner.Scan(K("b"), K("d"), 100, rows);
            scanner.Put(K("h"), K("h1"));
            var writer = db.BeginAt(s);
            writer.Put(K(inserted), K("new"));
            Assert.True(db.Commit(writer).Committed);
            var o = db.Commit(scanner);
            db.Release(s);
            Assert.Equal(expectCommit, o.Committed);
            if (!expectCommit)
            {
                Assert.Equal(AbortCause.Phantom, o.Cause);
                Assert.Equal(inserted, S(o.ConflictKey!));
            }
        }
    }

    [Fact]
    public void AScanCutByItsLimitDependsOnlyOnWhatItReturned()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g", "h");
        var s = db.PinCurrent();
        var scanner = db.BeginAt(s);
        var rows = new List<KeyValuePair<byte[], byte[]>>();
        Assert.Equal(2, scanner.Scan(K("a"), null, 2, rows));
        scanner.Put(K("h"), K("h1"));
        var writer = db.BeginAt(s);
        writer.Put(K("d5"), K("new"));
        Assert.True(db.Commit(writer).Committed);
        Assert.True(db.Commit(scanner).Committed);
        db.Release(s);
    }

    [Fact]
    public void DeletingAKeyUpdatedInTheConflictZoneAborts()
    {
        var db = Load("a", "b", "c");
        var s = db.PinCurrent();
        var deleter = db.BeginAt(s);
        deleter.Delete(K("b"));
        var updater = db.BeginAt(s);
        updater.Put(K("b"), K("b1"));
        Assert.True(db.Commit(updater).Committed);
        var o = db.Commit(deleter);
        db.Release(s);
        Assert.Equal(AbortCause.DeleteConflict, o.Cause);
        Assert.Equal("a=a0,b=b1,c=c0", Contents(db.Current));
    }

    [Fact]
    public void ReadCommittedNeverAbortsAndTheLaterWriteWins()
    {
        var db = Load("a", "b");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s, IsolationLevel.ReadCommitted);
        t1.Put(K("a"), K("1"));
        var t2 = db.BeginAt(s, IsolationLevel.ReadCommitted);
        t2.Put(K("a"), K("2"));
        t2.Delete(K("b"));
        var t3 = db.BeginAt(s, IsolationLevel.ReadCommitted);
        t3.Put(K("b"), K("3"));
        Assert.True(db.Commit(t1).Committed);
        Assert.True(db.Commit(t3).Committed);
        Assert.True(db.Commit(t2).Committed);
        db.Release(s);
        Assert.Equal("a=2", Contents(db.Current));
    }

    [Fact]
    public void ConcurrentInsertsOfTheSameKeyAbortTheSecond()
    {
        var db = Load("a", "c");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s);
        Assert.True(t1.Insert(K("b"), K("1")));
        var t2 = db.BeginAt(s);
        Assert.True(t2.Insert(K("b"), K("2")));
        Assert.True(db.Commit(t1).Committed);
        var o = db.Commit(t2);
        db.Release(s);
        Assert.Equal(AbortCause.WriteWrite, o.Cause);
    }

    [Fact]
    public void ManyConcurrentInsertsRebalanceTheStateDeterministically()
    {
        ulong? first = null;
        for (var run = 0; run < 2; run++)
        {
            var db = Load("m");
            var s = db.PinCurrent();
            var txs = Enumerable.Range(0, 64).Select(i =>
            {
                var tx = db.BeginAt(s);
                tx.Put(K($"k{i:D3}"), K("v"));
                return tx;
            }).ToList();
            foreach (var tx in txs)
            {
                Assert.True(db.Commit(tx).Committed);
                TreeInspector.ValidateState(db.Current.Root);
            }

            db.Release(s);
            var hash = TreeInspector.StateHash(db.Current.Root);
            Assert.Equal(first ?? hash, hash);
            first = hash;
        }
    }

    [Fact]
    public void MeldCountsItsWorkAndItsAbortsByCause()
    {
        var db = Load("a", "b", "c");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s);
        t1.Put(K("a"), K("1"));
        var t2 = db.BeginAt(s);
        t2.Put(K("a"), K("2"));
        var t3 = db.BeginAt(s);
        t3.Put(K("c"), K("3"));
        db.Commit(t1);
        db.Commit(t2);
        var o3 = db.Commit(t3);
        db.Release(s);
        var c = db.FinalMeld.Counters;
        Assert.Equal(4, c.Melds);
        Assert.Equal(1, c.AbortsByCause[(int)AbortCause.WriteWrite]);
        Assert.Equal(2, o3.ConflictZoneLength);
        Assert.True(o3.NodesVisited > 0);
        Assert.True(c.IntentionNodesVisited > 0 && c.StateNodesVisited > 0);
    }
}
