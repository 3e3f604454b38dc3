using System.Collections.Concurrent;
using System.Text;
using Hyder.Tree.Meld;
using Hyder.Tree.Pipeline;
using Xunit;

namespace Hyder.Tree.Tests;

/// <summary>
/// The property that keeps servers from diverging (Hyder II §3.4, App. C): the threaded pipeline,
/// with random delays between stages and threads started in random order, builds byte-identical
/// states (ephemeral ids included) after every intention, and the same decisions, as the
/// single-threaded reference.
/// </summary>
public sealed class ThreadedPipelineTests
{
    private sealed record Run(IReadOnlyDictionary<long, ulong> Hashes, IReadOnlyDictionary<long, string> Outcomes, string Contents, Database Database);

    private static Run Drive(int seed, int t, int d, int transactions, int? delaySeed, bool group = false, bool operations = false, bool split = false, bool cooperative = false)
    {
        var rng = new Random(seed);
        var db = new Database();
        static byte[] Key(int i) => [(byte)(i >> 8), (byte)i];
        db.BulkLoad([.. Enumerable.Range(0, 200).Where(i => i % 2 == 0).Select(i => new KeyValuePair<byte[], byte[]>(Key(i), Key(i)))]);
        if (split)
        {
            // Short phases; the hot counter and whatever else gets two operations in a phase is split.
            db.SplitPhases = new Doppel.SplitPhaseTable(new Doppel.SplitPhaseOptions { PhaseLength = 16, HotThreshold = 2, MaxSplitKeys = 4 }, phaseStart: db.LastAppended + 1);
        }

        var states = new ConcurrentDictionary<long, DatabaseState>();
        states[db.LastAppended] = db.PinCurrent();
        var hashes = new ConcurrentDictionary<long, ulong>();
        var outcomes = new ConcurrentDictionary<long, string>();
        var caller = Environment.CurrentManagedThreadId;
        void Melded(long v, MeldOutcome o, DatabaseState s)
        {
            if (cooperative && Environment.CurrentManagedThreadId != caller)
            {
                throw new InvalidOperationException($"#{v} was melded on thread {Environment.CurrentManagedThreadId}, not on the submitting thread {caller}");
            }

            outcomes[v] = o.Committed ? "commit" : o.Cause.ToString();

            // With group meld a state exists only after a whole pair (the reference reports both
            // decisions at once): compare and keep the states at pair ends.
            if (!group || v % 2 == 0)
            {
                hashes[v] = TreeInspector.StateHash(s.Root);
                states[v] = db.PinCurrent();
            }
        }

        var contents = "";
        ThreadedPipeline? threaded = null;
        ReferencePipeline? reference = null;
        if (cooperative)
        {
            threaded = new ThreadedPipeline(db, new PipelineOptions(t, d, group), new PipelineRuntime
            {
                Window = 64,
                Melded = Melded,
                Threading = new PipelineThreading { Cooperative = true },
            });
            Assert.True(threaded.Threading.Cooperative);
        }
        else if (delaySeed is { } ds)
        {
            var order = Enumerable.Range(0, t + (group ? 2 : 1)).OrderBy(i => HashCode.Combine(ds, i)).ToArray();
            threaded = new ThreadedPipeline(db, new PipelineOptions(t, d, group), window: 64, delay: (stage, v) => Delay(ds, stage, v), melded: Melded, startOrder: order);
        }
        else
        {
            reference = new ReferencePipeline(db, new PipelineOptions(t, d, group));
        }

        try
        {
            for (var n = 0; n < transactions; n++)
            {
                var v = db.LastAppended + 1;
                // With group meld the state after the first of a pair comes only with its partner.
                var newest = group && v % 2 == 0 ? v - 2 : v - 1;
                var snapshot = Math.Max(1, group ? newest - (2 * rng.Next(0, 20)) : newest - rng.Next(0, 40));
                DatabaseState? snap;
                var spin = default(SpinWait);
                while (!states.TryGetValue(snapshot, out snap))
                {
                    spin.SpinOnce(sleep1Threshold: 20);
                }

                using var tx = db.BeginAt(snap, rng.Next(3) == 0 ? IsolationLevel.SnapshotIsolation : IsolationLevel.Serializable);
                var ops = rng.Next(1, 7);
                for (var o = 0; o < ops; o++)
                {
                    try
                    {
                    var key = Key(rng.Next(220));
                    if (operations && rng.Next(3) == 0)
                    {
                        // Half on one hot counter (absent at first: odd keys are not loaded).
                        var k = rng.Next(2) == 0 ? Key(201) : key;
                        switch (rng.Next(4))
                        {
                            case 0: tx.Add(k, rng.Next(-30, 30), min: 0, max: 500); break;
                            case 1: tx.Add(k, rng.Next(1, 10)); break;
                            case 2: tx.Max(k, rng.Next(100)); break;
                            default: tx.TopKInsert(k, 4, rng.Next(50), Encoding.ASCII.GetBytes($"t{v}")); break;
                        }

                        continue;
                    }

                    switch (rng.Next(5))
                    {
                        case 0: tx.Delete(key); break;
                        case 1: tx.Insert(key, Encoding.ASCII.GetBytes($"i{v}")); break;
                        case 2: tx.Scan(key, Key(key[1] + 10), 4, []); break;
                        default: tx.TryGet(key, out _); break;
                    }
                    }
                    catch (Hyder.Tree.Commutative.SplitKeyReadException) when (split)
                    {
                        // A split key on a state inside its phase: the operation is refused before it
                        // changes anything, the same way in both pipelines (the phases follow the log).
                    }
                }

                try
                {
                    tx.Put(Key(rng.Next(220)), Encoding.ASCII.GetBytes($"p{v}"));
                }
                catch (Hyder.Tree.Commutative.SplitKeyReadException) when (split)
                {
                    tx.Put(Key(250), Encoding.ASCII.GetBytes($"p{v}"));
                }

                var intention = tx.Complete()!;
                db.Append(intention);
                if (threaded is not null)
                {
                    threaded.Submit(intention);
                }
                else
                {
                    foreach (var decision in reference!.Process(intention))
                    {
                        Melded(decision.Ordinal, decision.Outcome, db.Current);
                    }
                }

                if (states.TryRemove(v - 60, out var old))
                {
                    db.Release(old);
                }
            }
        }
        finally
        {
            threaded?.Dispose();
            if (reference is not null)
            {
                foreach (var decision in reference.Flush())
                {
                    Melded(decision.Ordinal, decision.Outcome, db.Current);
                }

                reference.ReleaseAll();
            }

            contents = string.Join(",", TreeInspector.Contents(db.Current.Root).Select(p => Convert.ToHexString(p.Key) + "=" + Encoding.ASCII.GetString(p.Value)));
            foreach (var s in states.Values)
            {
                db.Release(s);
            }
        }

        return new Run(hashes, outcomes, contents, db);
    }

    private static void Delay(int seed, PipelineStage stage, long v)
    {
        var h = (uint)HashCode.Combine(seed, stage, v);
        switch (h % 16)
        {
            case 0: Thread.Sleep(1); break;
            case 1: case 2: Thread.Yield(); break;
            default: Thread.SpinWait((int)(h % 2000)); break;
        }
    }

    [Theory]
    [InlineData(0, 0)]
    [InlineData(1, 0)]
    [InlineData(1, 4)]
    [InlineData(2, 1)]
    [InlineData(3, 3)]
    [InlineData(5, 10)]
    public void ThreadedPipelineBuildsTheReferencesStatesByteForByte(int t, int d)
    {
        for (var seed = 1; seed <= 3; seed++)
        {
            var expected = Drive(seed, t, d, 250, delaySeed: null);
            var actual = Drive(seed, t, d, 250, delaySeed: seed * 7919);
            Assert.Equal(expected.Hashes.Count, actual.Hashes.Count);
            foreach (var (v, hash) in expected.Hashes)
            {
                Assert.True(actual.Hashes.TryGetValue(v, out var h) && h == hash, $"t={t} d={d} seed={seed}: state after #{v} differs");
                Assert.Equal(expected.Outcomes[v], actual.Outcomes[v]);
            }
        }
    }

    /// <summary>
    /// The cooperative mode (no stage thread; each submit runs the stages on the caller's thread
    /// until none can progress) runs the same stage code and builds the reference's states byte
    /// for byte, premeld t ∈ {0, 1, 2} at d ∈ {1, 2, 3}, with group meld on and off.
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public void CooperativePipelineBuildsTheReferencesStatesByteForByte(bool group)
    {
        foreach (var t in new[] { 0, 1, 2 })
        {
            foreach (var d in t == 0 ? new[] { 0 } : [1, 2, 3])
            {
                for (var seed = 1; seed <= 2; seed++)
                {
                    var expected = Drive(seed, t, d, 250, delaySeed: null, group: group);
                    var actual = Drive(seed, t, d, 250, delaySeed: null, group: group, cooperative: true);
                    Assert.Equal(expected.Hashes.Count, actual.Hashes.Count);
                    foreach (var (v, hash) in expected.Hashes)
                    {
                        Assert.True(actual.Hashes.TryGetValue(v, out var h) && h == hash, $"cooperative, group {group}, t={t} d={d} seed={seed}: state after #{v} differs");
                        Assert.Equal(expected.Outcomes[v], actual.Outcomes[v]);
                    }

                    Assert.Equal(expected.Outcomes.Count, actual.Outcomes.Count);
                    Assert.Equal(expected.Contents, actual.Contents);
                }
            }
        }
    }

    /// <summary>
    /// A checkpoint barrier that is the last ordinal submitted completes without a later one: the
    /// group stage reports once it has finished the barrier (a checkpoint on a quiet log).
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ABarrierAtTheEndOfTheLogCompletesWithoutALaterOrdinal(bool cooperative)
    {
        var db = new Database();
        using var pipeline = new ThreadedPipeline(db, new PipelineOptions(2, 1, true), new PipelineRuntime
        {
            Window = 16,
            Threading = new PipelineThreading { Cooperative = cooperative },
        });
        pipeline.SubmitDecided(1, new MeldOutcome { Committed = true });
        var barrier = pipeline.SubmitBarrier(2);
        if (cooperative)
        {
            Assert.True(barrier.IsComplete);
        }
        else
        {
            await barrier.Sequences.WaitAsync(TimeSpan.FromSeconds(30));
        }

        Assert.Equal(2, pipeline.LastMelded);
        barrier.Release();
    }

    [Theory]
    [InlineData(0, 0)]
    [InlineData(1, 0)]
    [InlineData(2, 1)]
    [InlineData(3, 3)]
    [InlineData(5, 10)]
    public void ThreadedGroupMeldBuildsTheReferencesStatesByteForByte(int t, int d)
    {
        for (var seed = 1; seed <= 3; seed++)
        {
            var expected = Drive(seed, t, d, 250, delaySeed: null, group: true);
            var actual = Drive(seed, t, d, 250, delaySeed: seed * 7919, group: true);
            Assert.Equal(expected.Hashes.Count, actual.Hashes.Count);
            foreach (var (v, hash) in expected.Hashes)
            {
                Assert.True(actual.Hashes.TryGetValue(v, out var h) && h == hash, $"group, t={t} d={d} seed={seed}: state after #{v} differs");
                Assert.Equal(expected.Outcomes[v], actual.Outcomes[v]);
            }

            Assert.Equal(expected.Contents, actual.Contents);
            Assert.Contains(expected.Outcomes.Values, o => o == nameof(AbortCause.GroupConflict));
        }
    }

    [Theory]
    [InlineData(0, 0, false)]
    [InlineData(1, 0, false)]
    [InlineData(2, 1, false)]
    [InlineData(3, 3, false)]
    [InlineData(0, 0, true)]
    [InlineData(2, 1, true)]
    [InlineData(3, 3, true)]
    public void ThreadedPipelineWithOperationsBuildsTheReferencesStatesByteForByte(int t, int d, bool group)
    {
        for (var seed = 1; seed <= 3; seed++)
        {
            var expected = Drive(seed, t, d, 250, delaySeed: null, group, operations: true);
            var actual = Drive(seed, t, d, 250, delaySeed: seed * 7919, group, operations: true);
            Assert.Equal(expected.Hashes.Count, actual.Hashes.Count);
            foreach (var (v, hash) in expected.Hashes)
            {
                Assert.True(actual.Hashes.TryGetValue(v, out var h) && h == hash, $"operations, group {group}, t={t} d={d} seed={seed}: state after #{v} differs");
                Assert.Equal(expected.Outcomes[v], actual.Outcomes[v]);
            }

            Assert.Equal(expected.Contents, actual.Contents);
            Assert.Contains(expected.Outcomes.Values, o => o == nameof(AbortCause.BoundViolated));
        }
    }

    [Theory]
    [InlineData(0, 0, false)]
    [InlineData(2, 1, false)]
    [InlineData(0, 0, true)]
    [InlineData(2, 1, true)]
    public void ThreadedPipelineWithSplitPhasesBuildsTheReferencesStatesByteForByte(int t, int d, bool group)
    {
        for (var seed = 1; seed <= 3; seed++)
        {
            var expected = Drive(seed, t, d, 250, delaySeed: null, group, operations: true, split: true);
            var actual = Drive(seed, t, d, 250, delaySeed: seed * 7919, group, operations: true, split: true);
            Assert.Equal(expected.Hashes.Count, actual.Hashes.Count);
            foreach (var (v, hash) in expected.Hashes)
            {
                Assert.True(actual.Hashes.TryGetValue(v, out var h) && h == hash, $"split phases, group {group}, t={t} d={d} seed={seed}: state after #{v} differs");
                Assert.Equal(expected.Outcomes[v], actual.Outcomes[v]);
            }

            Assert.Equal(expected.Contents, actual.Contents);
            var table = (Doppel.SplitPhaseTable)expected.Database.SplitPhases!;
            Assert.True(table.StagedOperations > 0 && table.ReconciledKeys > 0, $"seed {seed}: nothing was staged and reconciled");
            Assert.Equal(table.StagedOperations, ((Doppel.SplitPhaseTable)actual.Database.SplitPhases!).StagedOperations);
        }
    }

    [Fact]
    public void PremeldOnAndOffReachTheSameDecisionsAndContentsWithOperations()
    {
        // Premeld carries operation lists to final meld, which applies them in log order: every
        // bounded Add decides the same with premeld on or off.
        var off = Drive(12, 0, 0, 250, delaySeed: null, operations: true);
        var on = Drive(12, 3, 2, 250, delaySeed: 5, operations: true);
        static IEnumerable<(long, bool)> Decisions(Run r) => r.Outcomes.OrderBy(p => p.Key).Select(p => (p.Key, p.Value == "commit"));
        Assert.Equal(Decisions(off), Decisions(on));
        Assert.Equal(off.Contents, on.Contents);
    }

    [Fact]
    public void ALongThreadedRunWithGroupMeldReleasesEveryStateItRetained()
    {
        AssertEverythingReleased(Drive(22, 3, 4, 2000, delaySeed: 5, group: true).Database);
    }

    [Fact]
    public void ALongThreadedRunReleasesEveryStateItRetained()
    {
        AssertEverythingReleased(Drive(21, 4, 5, 2000, delaySeed: 3).Database);
    }

    /// <summary>
    /// Every state the pipeline's stages and the test held is released, so one more meld reclaims
    /// all but the newest; the final-meld pool stays bounded and nodes did flow back to it.
    /// </summary>
    private static void AssertEverythingReleased(Database db)
    {
        Assert.Equal(0, db.Current.Pins);
        using (var tx = db.Begin())
        {
            tx.Put([0x7F, 0x7F], [1]);
            Assert.True(db.Commit(tx).Committed);
        }

        Assert.Equal(1, db.RetainedStates);
        Assert.True(db.MeldPool.Count <= Memory.NodePool.DefaultCapacity);
        Assert.True(db.MeldPool.Returned > 0);
    }

    [Fact]
    public void PremeldPoolsStopAllocatingOnceNodesFlowBackFromFinalMeld()
    {
        // Premeld makes nodes that final meld frees into its own pool; the exchange brings them
        // back in batches, so premeld threads allocate only while the pools warm up.
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(0, 4000).Select(i => new KeyValuePair<byte[], byte[]>([(byte)(i >> 8), (byte)i], [1]))]);
        var pipeline = new ReferencePipeline(db, premeldThreads: 2, distance: 2);
        var rng = new Random(5);
        long AllocatedByPremeld() => pipeline.PremeldOperators.Sum(o => o.Pool.Allocated);
        var snapshots = new Queue<DatabaseState>();
        long afterWarmUp = 0;
        for (var n = 0; n < 6000; n++)
        {
            if (n == 3000)
            {
                afterWarmUp = AllocatedByPremeld();
            }

            snapshots.Enqueue(db.PinCurrent());
            using var tx = db.BeginAt(snapshots.Peek());
            tx.TryGet([(byte)rng.Next(16), (byte)rng.Next(256)], out _);
            tx.Put([(byte)rng.Next(16), (byte)rng.Next(256)], [2]);
            var intention = tx.Complete()!;
            db.Append(intention);
            pipeline.Process(intention);
            if (snapshots.Count > 20)
            {
                db.Release(snapshots.Dequeue());
            }
        }

        var growth = AllocatedByPremeld() - afterWarmUp;
        pipeline.ReleaseAll();
        foreach (var s in snapshots)
        {
            db.Release(s);
        }

        Assert.True(afterWarmUp > 0, "premeld made no nodes: the test does not exercise it");
        Assert.True(pipeline.PremeldOperators.Sum(o => o.Pool.Taken) > 0, "no batch came back through the exchange");
        Assert.True(growth < afterWarmUp / 20, $"premeld pools kept allocating: {afterWarmUp} nodes while warming up, {growth} after");
    }

    [Fact]
    public void PremeldOnAndOffReachTheSameDecisionsAndContents()
    {
        // The trees differ physically (premeld makes other ephemeral nodes); what they hold and
        // every commit/abort decision must not. The cause may differ: premeld can meet another
        // conflicting key first.
        var off = Drive(11, 0, 0, 250, delaySeed: null);
        var on = Drive(11, 3, 2, 250, delaySeed: 5);
        static IEnumerable<(long, bool)> Decisions(Run r) => r.Outcomes.OrderBy(p => p.Key).Select(p => (p.Key, p.Value == "commit"));
        Assert.Equal(Decisions(off), Decisions(on));
        Assert.Equal(off.Contents, on.Contents);
        Assert.Contains(off.Outcomes.Values, o => o != "commit");
    }
}
