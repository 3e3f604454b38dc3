using Hyder.Tree.Commutative;
using Hyder.Tree.Meld;
using Hyder.Tree.Pipeline;
using Xunit;
using static Hyder.Tree.Tests.TestData;

namespace Hyder.Tree.Tests;

/// <summary>
/// A key the transaction creates and deletes again leaves no node and no delete entry, yet what the
/// transaction observed of it must survive (issue 18): an insert's check that the key was absent,
/// and — the other way round — a later miss that saw only the transaction's own delete must not
/// become a read of the snapshot.
/// </summary>
public sealed class OwnDeleteTests
{
    /// <summary>The pipelines every case runs through: final meld alone, premeld, group meld, both orders.</summary>
    public static TheoryData<string> Pipelines => ["final", "premeld", "group", "group-then-premeld", "premeld-then-group"];

    private static ReferencePipeline? PipelineFor(Database db, string name) => name switch
    {
        "final" => null,
        "premeld" => new ReferencePipeline(db, new PipelineOptions(2, 0, false, false)),
        "group" => new ReferencePipeline(db, new PipelineOptions(0, 0, true, false)),
        "group-then-premeld" => new ReferencePipeline(db, new PipelineOptions(2, 0, true, true)),
        _ => new ReferencePipeline(db, new PipelineOptions(2, 0, true, false)),
    };

    /// <summary>Appends and melds the two intentions in this order; returns both outcomes.</summary>
    private static (MeldOutcome First, MeldOutcome Second) MeldInOrder(Database db, string pipeline, Intention first, Intention second)
    {
        var p = PipelineFor(db, pipeline);
        if (p is null)
        {
            db.Append(first);
            var o1 = db.Meld(first);
            db.Append(second);
            return (o1, db.Meld(second));
        }

        var decisions = new List<PipelineDecision>();
        db.Append(first);
        decisions.AddRange(p.Process(first));
        db.Append(second);
        decisions.AddRange(p.Process(second));
        decisions.AddRange(p.Flush());
        p.ReleaseAll();
        Assert.Equal(2, decisions.Count);
        return (decisions.Single(d => d.Ordinal == first.Ordinal).Outcome, decisions.Single(d => d.Ordinal == second.Ordinal).Outcome);
    }

    [Theory]
    [MemberData(nameof(Pipelines))]
    public void AnInsertDeletedAgainStillChecksThatItsKeyWasAbsent(string pipeline)
    {
        // T1 saw k absent (its insert succeeded), so T1 precedes T2, which inserts k; T2 read the
        // x that T1 overwrites, so T2 precedes T1. Both cannot commit.
        var db = Load("x");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s);
        Assert.True(t1.Insert(K("k"), K("t1")));
        Assert.True(t1.Delete(K("k")));
        t1.Put(K("x"), K("1"));
        var t2 = db.BeginAt(s);
        Assert.True(t2.TryGet(K("x"), out var x));
        Assert.Equal("x0", S(x));
        Assert.True(t2.Insert(K("k"), K("t2")));

        var (o2, o1) = MeldInOrder(db, pipeline, t2.Complete()!, t1.Complete()!);
        db.Release(s);

        Assert.True(o2.Committed, $"T2: {o2}");
        Assert.False(o1.Committed, $"T1 committed although T2 inserted the key T1 saw absent: {Contents(db.Current)}");
        Assert.Equal("k=t2,x=x0", Contents(db.Current));
    }

    [Theory]
    [InlineData(IsolationLevel.RepeatableRead)]
    [InlineData(IsolationLevel.SnapshotIsolation)]
    [InlineData(IsolationLevel.ReadCommitted)]
    public void BelowSerializableAnInsertDeletedAgainLeavesNothingToConflict(IsolationLevel level)
    {
        // Those levels do not protect an absent key's read, and the transaction's net write of k is
        // nothing: committing beside a concurrent insert of k loses no update (docs/meld.md).
        var db = Load("x");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s, level);
        Assert.True(t1.Insert(K("k"), K("t1")));
        Assert.True(t1.Delete(K("k")));
        t1.Put(K("x"), K("1"));
        var t2 = db.BeginAt(s, level);
        Assert.True(t2.Insert(K("k"), K("t2")));

        var (o2, o1) = MeldInOrder(db, "final", t2.Complete()!, t1.Complete()!);
        db.Release(s);

        Assert.True(o2.Committed && o1.Committed, $"{o2} / {o1}");
        Assert.Equal("k=t2,x=1", Contents(db.Current));
    }

    [Theory]
    [MemberData(nameof(Pipelines))]
    public void AMissOnAKeyTheTransactionDeletedItselfIsNoReadOfTheSnapshot(string pipeline)
    {
        // T1 put k and deleted it again, then missed it twice: it observed nothing of the
        // snapshot's k, so T2's concurrent put of k does not conflict with it (T1 then T2).
        foreach (var rereadWithDelete in new[] { false, true })
        {
            var db = Load("x");
            var s = db.PinCurrent();
            var t1 = db.BeginAt(s);
            t1.Put(K("k"), K("t1"));
            Assert.True(t1.Delete(K("k")));
            if (rereadWithDelete)
            {
                Assert.False(t1.Delete(K("k")));
            }
            else
            {
                Assert.False(t1.TryGet(K("k"), out _));
            }

            t1.Put(K("x"), K("1"));
            var t2 = db.BeginAt(s);
            t2.Put(K("k"), K("t2"));

            var (o2, o1) = MeldInOrder(db, pipeline, t2.Complete()!, t1.Complete()!);
            db.Release(s);

            Assert.True(o2.Committed, $"T2: {o2}");
            Assert.True(o1.Committed, $"T1 ({(rereadWithDelete ? "delete" : "get")} after its own delete) aborted: {o1}");
            Assert.Equal("k=t2,x=1", Contents(db.Current));
        }
    }

    [Fact]
    public void AMissAfterDeletingASnapshotKeyIsNoPhantomButTheDeleteStillConflicts()
    {
        // The delete entry carries the check on k's version; the miss after it adds nothing.
        var db = Load("k", "x");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s);
        Assert.True(t1.Delete(K("k")));
        Assert.False(t1.TryGet(K("k"), out _));
        var intention = t1.Complete()!;
        Assert.Empty(intention.RootRanges);
        Assert.Null(intention.Root?.DependencyRanges);
        var t2 = db.BeginAt(s);
        t2.Put(K("k"), K("t2"));

        var (o2, o1) = MeldInOrder(db, "final", t2.Complete()!, intention);
        db.Release(s);

        Assert.True(o2.Committed);
        Assert.Equal(AbortCause.DeleteConflict, o1.Cause);
    }

    [Fact]
    public void AnInsertAfterTheTransactionsOwnDeleteObservesNothing()
    {
        // Put, delete, insert, delete: the insert saw the transaction's own delete, so the key has
        // no check at all and the concurrent writer of k does not abort T1.
        var db = Load("x");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s);
        t1.Put(K("k"), K("a"));
        Assert.True(t1.Delete(K("k")));
        Assert.True(t1.Insert(K("k"), K("b")));
        Assert.True(t1.Delete(K("k")));
        t1.Put(K("x"), K("1"));
        var t2 = db.BeginAt(s);
        t2.Put(K("k"), K("t2"));

        var (o2, o1) = MeldInOrder(db, "final", t2.Complete()!, t1.Complete()!);
        db.Release(s);

        Assert.True(o2.Committed && o1.Committed, $"{o2} / {o1}");
    }

    [Fact]
    public void AnOperationAfterTheTransactionsOwnDeleteAppliesToAbsence()
    {
        // T1 wrote k, deleted it, then added 5: it knows k is absent, so k ends as 5 whatever a
        // concurrent writer put there (read committed: blind, so T1 commits after T2).
        var db = Load("x");
        var s = db.PinCurrent();
        var t1 = db.BeginAt(s, IsolationLevel.ReadCommitted);
        t1.Put(K("k"), OperationFold.Integer(1));
        Assert.True(t1.Delete(K("k")));
        t1.Add(K("k"), 5);
        var t2 = db.BeginAt(s, IsolationLevel.ReadCommitted);
        t2.Put(K("k"), OperationFold.Integer(10));

        var (o2, o1) = MeldInOrder(db, "final", t2.Complete()!, t1.Complete()!);
        db.Release(s);

        Assert.True(o2.Committed && o1.Committed, $"{o2} / {o1}");
        var node = Keys.Find(db.Current.Root, K("k"));
        Assert.NotNull(node);
        Assert.True(OperationFold.TryInteger(node.Payload, out var n));
        Assert.Equal(5, n);
    }
}
