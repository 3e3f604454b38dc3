using Hyder.Tree.Commutative;
using Hyder.Tree.Meld;
using Hyder.Tree.Pipeline;
using Xunit;

namespace Hyder.Tree.Tests.Commutative;

/// <summary>Commutative operations through the executor and meld, by hand (docs/doppel.md).</summary>
public sealed class CommutativeMeldTests
{
    private static readonly byte[] s_hot = [0x40];

    private static byte[] Int(long v) => OperationFold.Integer(v);

    /// <summary>A database of keys 0x00, 0x10, ..., 0xF0 holding the integer 100, plus <see cref="s_hot"/> holding 10.</summary>
    private static Database NewDatabase()
    {
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(0, 16).Select(i => new KeyValuePair<byte[], byte[]>([(byte)(i * 16)], i == 4 ? Int(10) : Int(100)))]);
        return db;
    }

    private static long Value(Database db, byte[] key)
    {
        var n = Keys.Find(db.Current.Root, key);
        Assert.NotNull(n);
        Assert.True(OperationFold.TryInteger(n.Payload, out var v), "not an integer");
        return v;
    }

    /// <summary>Runs the transactions on one snapshot, then melds them in order.</summary>
    private static MeldOutcome[] Concurrently(Database db, IsolationLevel isolation, params Action<Transaction>[] bodies)
    {
        var snapshot = db.PinCurrent();
        var intentions = new List<Intention?>();
        foreach (var body in bodies)
        {
            using var tx = db.BeginAt(snapshot, isolation);
            body(tx);
            intentions.Add(tx.Complete());
        }

        db.Release(snapshot);
        var outcomes = new List<MeldOutcome>();
        foreach (var i in intentions)
        {
            Assert.NotNull(i);
            db.Append(i);
            outcomes.Add(db.Meld(i));
        }

        TreeInspector.ValidateState(db.Current.Root);
        return [.. outcomes];
    }

    [Theory]
    [InlineData(IsolationLevel.Serializable)]
    [InlineData(IsolationLevel.SnapshotIsolation)]
    [InlineData(IsolationLevel.ReadCommitted)]
    public void ConcurrentAddsOnOneKeyAllCommit(IsolationLevel isolation)
    {
        var db = NewDatabase();
        var outcomes = Concurrently(db, isolation, [.. Enumerable.Range(1, 8).Select(i => (Action<Transaction>)(tx => tx.Add(s_hot, i)))]);
        Assert.All(outcomes, o => Assert.True(o.Committed, o.ToString()));
        Assert.Equal(10 + 36, Value(db, s_hot));
        Assert.All(outcomes, o => Assert.Equal(1, o.OperationNodes));
    }

    [Fact]
    public void ConcurrentOperationsThatEachCreateAnAbsentKeyAllCommit()
    {
        var db = NewDatabase();
        byte[] fresh = [0x41];
        var outcomes = Concurrently(db, IsolationLevel.Serializable, tx => tx.Add(fresh, 3), tx => tx.Add(fresh, 4), tx => tx.Max(fresh, 2));
        Assert.All(outcomes, o => Assert.True(o.Committed, o.ToString()));
        Assert.Equal(7, Value(db, fresh));
    }

    [Fact]
    public void AnOrdinaryWriteInTheConflictZoneDoesNotMakeOperationsConflict()
    {
        var db = NewDatabase();
        var outcomes = Concurrently(db, IsolationLevel.Serializable, tx => tx.Put(s_hot, Int(1000)), tx => tx.Add(s_hot, 5));
        Assert.True(outcomes[1].Committed, outcomes[1].ToString());
        Assert.Equal(1005, Value(db, s_hot));
    }

    [Fact]
    public void OperationsOnAKeyDeletedInTheConflictZoneStartFromTheMissingValue()
    {
        var db = NewDatabase();
        var outcomes = Concurrently(db, IsolationLevel.Serializable, tx => tx.Delete(s_hot), tx => tx.Add(s_hot, 5), tx => tx.Min(s_hot, 3));
        Assert.All(outcomes, o => Assert.True(o.Committed, o.ToString()));
        Assert.Equal(3, Value(db, s_hot));
    }

    [Fact]
    public void ATransactionThatAlsoReadsTheKeyDependsOnItAsAnyRead()
    {
        var db = NewDatabase();
        var outcomes = Concurrently(
            db,
            IsolationLevel.Serializable,
            tx => tx.Add(s_hot, 1),
            tx =>
            {
                Assert.True(tx.TryGet(s_hot, out _));
                tx.Add(s_hot, 1);
            });
        Assert.True(outcomes[0].Committed);
        Assert.False(outcomes[1].Committed);
        Assert.Equal(AbortCause.ReadWrite, outcomes[1].Cause);
        Assert.Equal(11, Value(db, s_hot));
    }

    [Fact]
    public void ATransactionReadsItsOwnOperations()
    {
        var db = NewDatabase();
        using var tx = db.Begin();
        tx.Add(s_hot, 5);
        tx.Add(s_hot, -2);
        Assert.True(tx.TryGet(s_hot, out var v));
        Assert.Equal(Int(13), v);
        tx.Max([0x41], 7);
        var rows = new List<KeyValuePair<byte[], byte[]>>();
        tx.Scan([0x40], [0x50], 10, rows);
        Assert.Equal([(0x40, 13L), (0x41, 7L), (0x50, 100L)], rows.Select(r => ((int)r.Key[0], OperationFold.TryInteger(r.Value, out var n) ? n : -1)));
    }

    [Fact]
    public void ABoundedAddAbortsExactlyWhenItWouldCrossItsBound()
    {
        var db = NewDatabase();

        // 10 - 6 = 4 commits; the next -6 would leave 0: it aborts, named; the +3 after it commits.
        var outcomes = Concurrently(
            db,
            IsolationLevel.Serializable,
            tx => tx.Add(s_hot, -6, min: 0),
            tx => tx.Add(s_hot, -6, min: 0),
            tx => tx.Add(s_hot, 3, min: 0, max: 7));
        Assert.True(outcomes[0].Committed);
        Assert.False(outcomes[1].Committed);
        Assert.Equal(AbortCause.BoundViolated, outcomes[1].Cause);
        Assert.Equal(s_hot, outcomes[1].ConflictKey);
        Assert.True(outcomes[2].Committed);
        Assert.Equal(7, Value(db, s_hot));
    }

    [Fact]
    public void AnOperationOnAValueOfAnotherTypeAbortsWithTheCauseNamed()
    {
        var db = NewDatabase();
        var outcomes = Concurrently(db, IsolationLevel.Serializable, tx => tx.Put(s_hot, "text"u8.ToArray()), tx => tx.Add(s_hot, 1));
        Assert.Equal(AbortCause.TypeMismatch, outcomes[1].Cause);
    }

    [Fact]
    public void AnIntentionWithOperationsIsNeverSerialAndLeavesNoListInTheState()
    {
        var db = NewDatabase();
        using var tx = db.Begin();
        tx.Add(s_hot, 1);
        var intention = tx.Complete()!;
        Assert.True(intention.HasOperations);
        db.Append(intention);
        var o = db.Meld(intention);
        Assert.True(o.Committed);
        Assert.False(o.Serial);
        TreeInspector.ValidateState(db.Current.Root);
        var node = Keys.Find(db.Current.Root, s_hot)!;
        Assert.True(node.Vn.IsEphemeral, "an applied list becomes a new ephemeral node");
        Assert.True(node.Altered && node.Ncv == node.Vn, "its content version is its own");
    }

    [Fact]
    public void OperationsOnAValueTheTransactionWroteAreAppliedByTheExecutor()
    {
        var db = NewDatabase();
        using (var tx = db.Begin())
        {
            tx.Put(s_hot, Int(50));
            tx.Add(s_hot, 5);
            tx.Min(s_hot, 52);
            var i = tx.Complete()!;
            Assert.False(i.HasOperations);
            db.Append(i);
            Assert.True(db.Meld(i).Committed);
        }

        Assert.Equal(52, Value(db, s_hot));

        // Deleted, then an operation: it starts from the missing value (a re-insert).
        using (var tx = db.Begin())
        {
            Assert.True(tx.Delete(s_hot));
            tx.Add(s_hot, 4);
            Assert.True(db.Commit(tx).Committed);
        }

        Assert.Equal(4, Value(db, s_hot));
    }

    [Fact]
    public void ABoundCrossedOnAValueTheTransactionKnowsAbortsItInMeld()
    {
        var db = NewDatabase();
        using var tx = db.Begin();
        tx.Put(s_hot, Int(1));
        tx.Add(s_hot, -2, min: 0);
        var o = db.Commit(tx);
        Assert.Equal(AbortCause.BoundViolated, o.Cause);
        Assert.Equal(10, Value(db, s_hot));
    }

    [Fact]
    public void OrdinaryWritesAfterOperationsKeepTheirBoundsChecked()
    {
        var db = NewDatabase();

        // Add, then delete: the key is gone, but the Add's bound was checked first.
        var outcomes = Concurrently(
            db,
            IsolationLevel.SnapshotIsolation,
            tx => tx.Add(s_hot, -4),
            tx =>
            {
                tx.Add(s_hot, -8, min: 0);
                Assert.True(tx.TryGet(s_hot, out _));
                Assert.True(tx.Delete(s_hot));
                Assert.False(tx.TryGet(s_hot, out _));
            });
        Assert.True(outcomes[0].Committed);

        // The delete is a checked write at snapshot isolation: the first changed the key.
        Assert.Equal(AbortCause.WriteWrite, outcomes[1].Cause);

        using (var tx = db.Begin(IsolationLevel.SnapshotIsolation))
        {
            tx.Add(s_hot, -8, min: 0);
            tx.Put(s_hot, Int(99));
            Assert.Equal(AbortCause.BoundViolated, db.Commit(tx).Cause);
        }

        using (var tx = db.Begin(IsolationLevel.SnapshotIsolation))
        {
            tx.Add(s_hot, -6, min: 0);
            Assert.True(tx.Delete(s_hot));
            Assert.True(db.Commit(tx).Committed);
        }

        Assert.Null(Keys.Find(db.Current.Root, s_hot));
    }

    [Theory]
    [InlineData(IsolationLevel.Serializable)]
    [InlineData(IsolationLevel.SnapshotIsolation)]
    public void InReadModifyWriteModeConcurrentIncrementsConflict(IsolationLevel isolation)
    {
        var db = NewDatabase();
        var outcomes = Concurrently(
            db,
            isolation,
            [.. Enumerable.Range(0, 4).Select(_ => (Action<Transaction>)(tx =>
            {
                tx.CommutativeMode = CommutativeMode.ReadModifyWrite;
                tx.Add(s_hot, 1);
            }))]);
        Assert.True(outcomes[0].Committed);
        Assert.All(outcomes[1..], o => Assert.Equal(AbortCause.WriteWrite, o.Cause));
        Assert.Equal(11, Value(db, s_hot));
    }

    [Fact]
    public void InReadModifyWriteModeTheIntentionIsAnOrdinaryReadAndWrite()
    {
        var db = NewDatabase();
        using var tx = db.Begin();
        tx.CommutativeMode = CommutativeMode.ReadModifyWrite;
        tx.Add(s_hot, 5, max: 20);
        var i = tx.Complete()!;
        Assert.False(i.HasOperations);
        var n = Keys.Find(i.Root, s_hot)!;
        Assert.True(n.Altered && n.DependsOn);
        Assert.Equal(Int(15), n.Payload);
        db.Append(i);
        Assert.True(db.Meld(i).Committed);
    }

    [Fact]
    public void InReadModifyWriteModeACrossedBoundAbortsAfterTheReadIsChecked()
    {
        var db = NewDatabase();

        // Current read: the violation is real.
        using (var tx = db.Begin())
        {
            tx.CommutativeMode = CommutativeMode.ReadModifyWrite;
            tx.Add(s_hot, -11, min: 0);
            Assert.Equal(AbortCause.BoundViolated, db.Commit(tx).Cause);
        }

        // Stale read: the transaction is told its write conflicted (a retry would see 30), not that the bound failed.
        var outcomes = Concurrently(
            db,
            IsolationLevel.Serializable,
            tx => tx.Add(s_hot, 20),
            tx =>
            {
                tx.CommutativeMode = CommutativeMode.ReadModifyWrite;
                tx.Add(s_hot, -11, min: 0);
            });
        Assert.Equal(AbortCause.WriteWrite, outcomes[1].Cause);
    }

    [Fact]
    public void PremeldCarriesOperationsAndFinalMeldAppliesThem()
    {
        var db = NewDatabase();
        var pipeline = new ReferencePipeline(db, premeldThreads: 1, distance: 0);
        var snapshot = db.PinCurrent();
        var decisions = new List<PipelineDecision>();
        for (var i = 0; i < 6; i++)
        {
            using var tx = db.BeginAt(snapshot);
            tx.Add(s_hot, -3, min: 0);
            var intention = tx.Complete()!;
            db.Append(intention);
            decisions.AddRange(pipeline.Process(intention));
        }

        db.Release(snapshot);
        pipeline.ReleaseAll();
        Assert.True(pipeline.Premelded > 0);
        Assert.Equal([true, true, true, false, false, false], decisions.Select(d => d.Committed));
        Assert.All(decisions.Skip(3), d => Assert.Equal(AbortCause.BoundViolated, d.Outcome.Cause));
        Assert.Equal(1, Value(db, s_hot));
    }

    [Fact]
    public void GroupMeldJoinsTheTwoListsAndFinalMeldChecksEachBoundInOrder()
    {
        var db = NewDatabase();
        var pipeline = new ReferencePipeline(db, new PipelineOptions(GroupMeld: true));
        var snapshot = db.PinCurrent();
        var decisions = new List<PipelineDecision>();
        foreach (var delta in new long[] { 4, -9, -5, -8, 3 })
        {
            using var tx = db.BeginAt(snapshot);
            tx.Add(s_hot, delta, min: 0);
            var intention = tx.Complete()!;
            db.Append(intention);
            decisions.AddRange(pipeline.Process(intention));
        }

        db.Release(snapshot);
        pipeline.ReleaseAll();

        // #2 (even, the first after the start) is alone: 14. Pair #3+#4: 14 - 9 - 5 = 0 commits.
        // Pair #5+#6: -8 crosses 0, so the pair shares the abort (the +3 alone would have committed).
        Assert.Equal([true, true, true, false, false], decisions.Select(d => d.Committed));
        Assert.True(decisions[1].Outcome.Grouped);
        Assert.Equal(AbortCause.BoundViolated, decisions[3].Outcome.Cause);
        Assert.Equal(0, Value(db, s_hot));
    }

    [Fact]
    public void TheSplitTableSeamTakesTheOperationsOfSplitKeys()
    {
        var db = NewDatabase();
        var table = new FakeSplitTable(s_hot);
        db.FinalMeld.SplitTable = table;
        var before = Keys.Find(db.Current.Root, s_hot);
        var outcomes = Concurrently(
            db,
            IsolationLevel.Serializable,
            tx => tx.Add(s_hot, 2),
            tx =>
            {
                tx.Add(s_hot, 3);
                tx.Add([0x30], 1);
            },
            tx => tx.Add(s_hot, -100, min: 0),
            tx =>
            {
                tx.Add(s_hot, 1);
                tx.Put([0x20], Int(0));
            });
        Assert.Equal([true, true, false, true], outcomes.Select(o => o.Committed));
        Assert.Equal(AbortCause.BoundViolated, outcomes[2].Cause);

        // The split key's node is untouched (no path copy); the other key was applied to the tree.
        Assert.Same(before, Keys.Find(db.Current.Root, s_hot));
        Assert.Equal(101, Value(db, [0x30]));
        Assert.Equal(16, table.Value);
        Assert.Equal(["commit 2", "commit 3", "abort 4", "commit 5"], table.Log);
    }

    /// <summary>A side table for one key holding Adds only, staged and committed per intention.</summary>
    private sealed class FakeSplitTable(byte[] key) : ISplitTable
    {
        private long _staged;

        public long Value { get; private set; } = 10;

        public List<string> Log { get; } = [];

        public IReadOnlyList<byte[]> ChangedKeys => [];

        // Always through the tree's recursion (IsSplit false), so the test sees Stage offered every list.
        public bool IsSplit(byte[] k) => false;

        public bool IsChanged(byte[] k) => false;

        public SplitStatus Stage(byte[] k, ReadOnlySpan<byte> operations, byte[]? current, long ordinal)
        {
            if (!k.AsSpan().SequenceEqual(key))
            {
                return SplitStatus.NotSplit;
            }

            var error = OperationFold.Apply(operations, OperationFold.Integer(Value + _staged), out var result);
            if (error != FoldError.None)
            {
                return error == FoldError.BoundViolated ? SplitStatus.BoundViolated : SplitStatus.TypeMismatch;
            }

            OperationFold.TryInteger(result, out var v);
            _staged = v - Value;
            return SplitStatus.Staged;
        }

        public void Commit(long ordinal)
        {
            Value += _staged;
            _staged = 0;
            Log.Add($"commit {ordinal}");
        }

        public void Abort(long ordinal)
        {
            _staged = 0;
            Log.Add($"abort {ordinal}");
        }
    }
}
