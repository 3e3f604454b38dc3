using Hyder.Tree.Commutative;
using Hyder.Tree.Meld;
using Xunit;
using static Hyder.Tree.Tests.ExecutorTests;
using static Hyder.Tree.Tests.TestData;

namespace Hyder.Tree.Tests;

/// <summary>Intentions that break the engine's rules are rejected with a reason, the same way everywhere, and change nothing.</summary>
public sealed class BadInputTests
{
    private static (Database Db, Intention Intention) Prepared(Action<Transaction> work)
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var tx = db.Begin();
        work(tx);
        var i = tx.Complete()!;
        db.Append(i);
        return (db, i);
    }

    private static void AssertRejected(Database db, Intention i, string reason)
    {
        var before = db.Current;
        var hash = TreeInspector.StateHash(before.Root);
        var o = db.Meld(i);
        Assert.False(o.Committed);
        Assert.Equal(AbortCause.Rejected, o.Cause);
        Assert.Contains(reason, o.RejectReason, StringComparison.Ordinal);
        Assert.Same(before, db.Current);
        Assert.Equal(hash, TreeInspector.StateHash(db.Current.Root));

        // The database goes on melding.
        var next = db.Begin();
        next.Put(K("z"), K("z1"));
        Assert.True(db.Commit(next).Committed);
    }

    [Fact]
    public void KeysOutOfOrderAreRejected()
    {
        var (db, i) = Prepared(tx => tx.Put(K("a"), K("x")));
        var a = Find(i.Root, "a")!;
        a.Key = K("zzz");
        AssertRejected(db, i, "out of order");
    }

    [Fact]
    public void APointerToARecycledNodeIsRejected()
    {
        var (db, i) = Prepared(tx => tx.Put(K("d"), K("x")));
        var outside = i.Root!.Left!;
        Assert.False(i.Contains(outside));
        i.Root.Left = new Node { Key = outside.Key, Flags = NodeFlags.Pooled };
        AssertRejected(db, i, "recycled node");
    }

    [Fact]
    public void APointerToAnUnpublishedNodeIsRejected()
    {
        var (db, i) = Prepared(tx => tx.Put(K("d"), K("x")));
        var outside = i.Root!.Left!;
        i.Root.Left = new Node { Key = outside.Key, Payload = outside.Payload, Height = outside.Height, Owner = i.Ordinal + 5, Vn = outside.Vn };
        AssertRejected(db, i, "does not resolve");
    }

    [Fact]
    public void ACopiedNodeWithoutASourceVersionIsRejected()
    {
        var (db, i) = Prepared(tx =>
        {
            tx.TryGet(K("a"), out _);
            tx.Put(K("g"), K("x"));
        });
        Find(i.Root, "a")!.Scv = NodeVersion.None;
        AssertRejected(db, i, "neither written nor copied");
    }

    [Fact]
    public void AReadOfAKeyTheSnapshotDidNotHoldIsRejected()
    {
        var (db, i) = Prepared(tx => tx.Put(K("zz"), K("x")));
        Find(i.Root, "zz")!.Flags |= NodeFlags.DependsOn;
        AssertRejected(db, i, "depends on a snapshot version");
    }

    [Fact]
    public void AWrongHeightIsRejected()
    {
        var (db, i) = Prepared(tx => tx.Put(K("a"), K("x")));
        i.Root!.Height = 9;
        AssertRejected(db, i, "height");
    }

    [Fact]
    public void AKeyBothDeletedAndPresentIsRejected()
    {
        var (db, i) = Prepared(tx =>
        {
            tx.Delete(K("b"));
            tx.Put(K("c"), K("x"));
        });
        var c = Find(i.Root, "c")!;
        c.Key = K("b");
        c.Key = K("c");
        var doctored = new Intention(i.Root, i.Snapshot, i.Isolation, [new DeleteEntry(K("c"), c.Scv, false)], [], 0);
        doctored.Seal(i.Ordinal, i.Position);
        AssertRejected(db, doctored, "both deleted and present");
    }

    [Fact]
    public void ThePipelineRejectsABadIntentionInItsTurnAndGoesOn()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var pipeline = new Pipeline.ReferencePipeline(db, premeldThreads: 2, distance: 0);
        var snapshot = db.PinCurrent();
        var outcomes = new List<MeldOutcome>();
        for (var i = 0; i < 6; i++)
        {
            var tx = db.BeginAt(snapshot);
            tx.Put(K(((char)('a' + i)).ToString()), K($"v{i}"));
            var intention = tx.Complete()!;
            db.Append(intention);
            if (i == 3)
            {
                intention.Root!.Height = 42;
            }

            outcomes.Add(pipeline.Process(intention)[0].Outcome);
        }

        pipeline.ReleaseAll();
        db.Release(snapshot);
        Assert.Equal(AbortCause.Rejected, outcomes[3].Cause);
        Assert.All(outcomes.Where((_, i) => i != 3), o => Assert.True(o.Committed));
        Assert.Equal("a=v0,b=v1,c=v2,d=d0,e=v4,f=v5,g=g0", Contents(db.Current));
    }

    [Fact]
    public void TwoServersRejectTheSameIntentionWithTheSameMessage()
    {
        string Reject()
        {
            var (db, i) = Prepared(tx => tx.Put(K("a"), K("x")));
            Find(i.Root, "a")!.Flags |= NodeFlags.BlindWrite;
            return db.Meld(i).RejectReason!;
        }

        var first = Reject();
        Assert.Contains("blind write", first, StringComparison.Ordinal);
        Assert.Equal(first, Reject());
    }
    [Fact]
    public void AnOperationListWhereMeldCouldGraftItIsRejected()
    {
        // The root is an ancestor of the node with operations: an SSV there would let meld graft
        // the subtree with the list unapplied.
        var (db, i) = Prepared(tx => tx.Add(K("a"), 1));
        i.Root!.Ssv = i.Root.Scv;
        AssertRejected(db, i, "holds operations in its subtree");
    }

    [Fact]
    public void AMalformedOperationListIsRejected()
    {
        var (db, i) = Prepared(tx => tx.Add(K("a"), 1));
        Find(i.Root, "a")!.Payload = [99];
        AssertRejected(db, i, "malformed operation list");
    }

    [Fact]
    public void AnOperationListThatLiesAboutBeingAWriteIsRejected()
    {
        var (db, i) = Prepared(tx => tx.Add(K("a"), 1));
        Find(i.Root, "a")!.Flags |= NodeFlags.Altered;
        AssertRejected(db, i, "holds no put or delete");
    }

    [Fact]
    public void OperationsTheIntentionDoesNotDeclareAreRejected()
    {
        // Final meld's serial shortcut trusts the flag: it would graft the list into the state.
        var (db, i) = Prepared(tx => tx.Put(K("a"), K("x")));
        for (var n = i.Root; n is not null && i.Contains(n); n = Keys.Compare(K("a"), n.Key) < 0 ? n.Left : n.Right)
        {
            n.Ssv = NodeVersion.None;
            if (n.Key.AsSpan().SequenceEqual(K("a")))
            {
                n.Payload = OperationList.Encode(Operation.Put(K("x")));
                n.Flags |= NodeFlags.Operations;
                break;
            }
        }

        AssertRejected(db, i, "does not declare");
    }
}
