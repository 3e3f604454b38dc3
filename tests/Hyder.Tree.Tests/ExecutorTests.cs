using Xunit;
using static Hyder.Tree.Tests.TestData;

namespace Hyder.Tree.Tests;

public sealed class ExecutorTests
{
    [Fact]
    public void ReadOnlyTransactionProducesNoIntentionAndReleasesItsSnapshot()
    {
        var db = Load("a", "b", "c");
        var tx = db.Begin();
        Assert.True(tx.TryGet(K("b"), out var v));
        Assert.Equal("b0", S(v));
        Assert.Equal(1, db.Current.Pins);
        Assert.Null(tx.Complete());
        Assert.Equal(0, db.Current.Pins);
    }

    [Fact]
    public void AnIntentionNamesEveryNodeItsTransactionMadeUntilItIsValidated()
    {
        // MadeNodes is the validator's prefetch list: it must cover the nodes validation walks
        // (hints only, so a miss would cost speed, not a result), and go once it is used.
        var db = Load([.. Enumerable.Range(0, 64).Select(i => $"k{i:D2}")]);
        var tx = db.Begin(IsolationLevel.Serializable);
        foreach (var k in new[] { "k03", "k17", "k40", "k41", "k62" })
        {
            Assert.True(tx.TryGet(K(k), out _));
        }

        tx.Put(K("k20"), K("w"));
        Assert.True(tx.Insert(K("k20a"), K("new")));
        Assert.True(tx.Delete(K("k50")));
        var intention = tx.Complete()!;

        var made = intention.MadeNodes.ToArray().ToHashSet(ReferenceEqualityComparer.Instance);
        var inside = new List<Node>();
        Inside(intention.Root, intention.ExecutorToken, inside);
        Assert.True(inside.Count > 10, $"{inside.Count} inside nodes");
        Assert.All(inside, n => Assert.Contains(n, made));

        IntentionValidator.ValidateBeforeAppend(intention);
        Assert.True(intention.MadeNodes.IsEmpty);
        Assert.True(intention.IsValidated);

        static void Inside(Node? n, long token, List<Node> into)
        {
            if (n is null || n.Owner != token)
            {
                return;
            }

            into.Add(n);
            Inside(n.Left, token, into);
            Inside(n.Right, token, into);
        }
    }

    [Fact]
    public void ReadsSeeTheTransactionsOwnWritesAndNotLaterCommits()
    {
        var db = Load("a", "b", "c");
        var tx = db.Begin();
        tx.Put(K("b"), K("mine"));
        Assert.True(tx.Delete(K("c")));
        Assert.True(tx.Insert(K("d"), K("new")));

        var other = db.Begin();
        other.Put(K("a"), K("theirs"));
        Assert.True(db.Commit(other).Committed);

        Assert.True(tx.TryGet(K("a"), out var a));
        Assert.Equal("a0", S(a));
        Assert.True(tx.TryGet(K("b"), out var b));
        Assert.Equal("mine", S(b));
        Assert.False(tx.TryGet(K("c"), out _));
        var scan = new List<KeyValuePair<byte[], byte[]>>();
        Assert.Equal(3, tx.Scan(K("a"), null, 10, scan));
        Assert.Equal(["a", "b", "d"], scan.Select(p => S(p.Key)));
        tx.Dispose();
    }

    [Fact]
    public void SerializableReadCopiesThePathAndMarksTheNodeRead()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var tx = db.Begin(IsolationLevel.Serializable);
        tx.TryGet(K("a"), out _);
        tx.Put(K("g"), K("x"));
        var i = tx.Complete()!;
        db.Append(i);
        var a = Find(i.Root, "a")!;
        Assert.True(i.Contains(a));
        Assert.True(a.DependsOn);
        Assert.False(a.Altered);
        Assert.True(a.SubtreeIsOnlyReadDependent);
        var g = Find(i.Root, "g")!;
        Assert.True(g.Altered);
        Assert.False(i.Root!.SubtreeIsOnlyReadDependent);
        IntentionValidator.Validate(i);
        db.Meld(i);
    }

    [Fact]
    public void SnapshotIsolationReadsLeaveNoTraceInTheIntention()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var tx = db.Begin(IsolationLevel.SnapshotIsolation);
        tx.TryGet(K("a"), out _);
        tx.Put(K("g"), K("x"));
        var i = tx.Complete()!;
        db.Append(i);
        var a = Find(i.Root, "a")!;
        Assert.False(i.Contains(a));
        db.Meld(i);
    }

    [Fact]
    public void InsertOfAnExistingKeyFailsAndWritesNothing()
    {
        var db = Load("a");
        var tx = db.Begin();
        Assert.False(tx.Insert(K("a"), K("x")));
        Assert.False(tx.HasWrites);
        Assert.Null(tx.Complete());
    }

    [Fact]
    public void DeleteRecordsTheDeletedContentVersionAndReinsertTurnsItIntoAnUpdate()
    {
        var db = Load("a", "b", "c");
        var version = Find(db.Current.Root, "b")!.Ncv;
        var tx = db.Begin();
        Assert.True(tx.Delete(K("b")));
        Assert.True(tx.Delete(K("a")));
        var i = tx.Complete()!;
        Assert.Equal(["a", "b"], i.Deletes.Select(d => S(d.Key)));
        Assert.Equal(version, i.Deletes[1].Scv);
        db.Append(i);
        Assert.True(db.Meld(i).Committed);
        Assert.Equal("c=c0", Contents(db.Current));

        var db2 = Load("a", "b", "c");
        var tx2 = db2.Begin();
        tx2.Delete(K("b"));
        tx2.Put(K("b"), K("back"));
        var i2 = tx2.Complete()!;
        Assert.Empty(i2.Deletes);
        Assert.True(Find(i2.Root, "b")!.Scv.IsSome);
        db2.Append(i2);
        Assert.True(db2.Meld(i2).Committed);
    }

    [Fact]
    public void ManyWritesKeepTheIntentionBalancedAndValid()
    {
        var db = Load([.. Enumerable.Range(0, 200).Select(i => $"k{i:D4}")]);
        var rng = new Random(7);
        var tx = db.Begin();
        for (var n = 0; n < 400; n++)
        {
            var key = K($"k{rng.Next(400):D4}");
            switch (rng.Next(3))
            {
                case 0: tx.Put(key, K("p")); break;
                case 1: tx.Delete(key); break;
                default: tx.TryGet(key, out _); break;
            }
        }

        var i = tx.Complete()!;
        db.Append(i);
        IntentionValidator.Validate(i);
        Assert.True(db.Meld(i).Committed);
        TreeInspector.ValidateState(db.Current.Root);
    }

    [Fact]
    public void DisposingWithoutCompletingReleasesTheSnapshotAndWritesNothing()
    {
        var db = Load("a");
        var tx = db.Begin();
        tx.Put(K("a"), K("x"));
        tx.Dispose();
        Assert.Equal(0, db.Current.Pins);
        Assert.Equal("a=a0", Contents(db.Current));
        Assert.Throws<InvalidOperationException>(() => tx.Put(K("a"), K("y")));
    }

    [Fact]
    public void TheReadmeExampleWorks()
    {
        var db = new Database();
        using (var tx = db.Begin(IsolationLevel.Serializable))
        {
            tx.Put("user:1"u8.ToArray(), "alice"u8.ToArray());
            var outcome = db.Commit(tx);
            Assert.Equal("committed (zone 0, visited 0, ephemeral 0)", outcome.ToString());
        }

        Assert.Equal("user:1=alice", Contents(db.Current));
    }

    [Fact]
    public void EmptyKeysAreRefused()
    {
        var db = Load("a");
        using var tx = db.Begin();
        Assert.Throws<ArgumentException>(() => tx.Put([], K("x")));
        Assert.Throws<ArgumentException>(() => tx.TryGet([], out _));
    }

    internal static Node? Find(Node? n, string key) => Keys.Find(n, K(key));
}
