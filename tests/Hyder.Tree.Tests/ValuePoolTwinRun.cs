using System.Buffers.Binary;
using System.Text;
using FsCheck.Fluent;
using Hyder.Tree.Commutative;
using Hyder.Tree.Memory;
using Hyder.Tree.Meld;
using Hyder.Tree.Pipeline;
using Xunit;

namespace Hyder.Tree.Tests;

/// <summary>The shape of one twin run (<see cref="TwinRun"/>).</summary>
/// <param name="Seed">Drives every random choice.</param>
/// <param name="KeySpace">Ordinary keys that can occur (two bytes); four counter keys come after them.</param>
/// <param name="InitialKeys">Ordinary keys bulk-loaded before the run.</param>
/// <param name="Rounds">Rounds of one to four transactions begun together, then melded in turn.</param>
/// <param name="MaxLag">Largest snapshot lag, in melds: the pinned states transactions may begin on.</param>
/// <param name="MaxOps">Operations per transaction, at most.</param>
/// <param name="BigPercent">Share of written values of 64 KiB, 64 KiB + 1 or 100,000 bytes.</param>
/// <param name="PremeldThreads">t of the reference pipeline (0 with no group meld: final meld only).</param>
/// <param name="Distance">d of the reference pipeline.</param>
/// <param name="GroupMeld">Group meld pairs intentions.</param>
/// <param name="GroupFirst">With premeld too: group first, then premeld the group.</param>
/// <param name="SplitPhaseLength">Doppel's split phases, one every this many ordinals (0: off); the hot counters split.</param>
public sealed record TwinConfig(
    int Seed,
    int KeySpace,
    int InitialKeys,
    int Rounds,
    int MaxLag,
    int MaxOps,
    int BigPercent,
    int PremeldThreads = 0,
    int Distance = 0,
    bool GroupMeld = false,
    bool GroupFirst = false,
    int SplitPhaseLength = 0);

/// <summary>What the pooled twin did over one run.</summary>
internal readonly record struct TwinCounts(long Commits, long Taken, long Reused, long Returned, long Reconciled);

/// <summary>
/// Two databases, one with a <see cref="ValuePool"/> and one without, bulk-loaded from the same
/// pairs and run through the same random transactions in lockstep: every read (compared by
/// content, and checked again just before its transaction ends), every decision and every state
/// hash equal. The pooled twin's states also keep the pool's own rules: a pooled array under one
/// key only, no node whose value was freed, and a pinned state unchanged until released.
/// </summary>
internal static class TwinRun
{
    private static readonly int[] s_bigLengths = [ValuePool.MaxLength, ValuePool.MaxLength + 1, 100_000];

    private const int Counters = 4;

    /// <summary>The byte a value handed to the pooled twin is overwritten with once written: it is the caller's again.</summary>
    private const byte Scribble = 0x5A;

    /// <summary>One transaction run on both twins, with the values the pooled one lent.</summary>
    private sealed class Pair(Transaction pooled, Transaction plain)
    {
        public readonly Transaction Pooled = pooled;
        public readonly Transaction Plain = plain;
        public readonly List<(byte[] Lent, byte[] Copy)> Lent = [];
        public readonly StringBuilder Log = new();

        public void Keep(byte[] lent)
        {
            if (lent.Length > 0)
            {
                Lent.Add((lent, lent.ToArray()));
            }
        }
    }

    private static byte[] KeyOf(int i) => ValuePoolTests.KeyOf(i);

    private static byte[] CounterOf(int i) => [0xC0, (byte)i];

    public static TwinCounts Run(TwinConfig cfg, SortedDictionary<AbortCause, long> byCause)
    {
        var rng = new Random(cfg.Seed);
        var pooled = new Database(values: new ValuePool());
        var plain = new Database();
        var round = 0;
        var written = 0;
        long commits = 0;

        // Checks run at every operation: their messages are built only on failure.
        void Fail(string what) => Assert.Fail($"{cfg}, round {round}: {what}");

        // Mostly short values of few lengths (arrays come back and are taken again at once), some
        // of 8 bytes (integers to Add to), a few empty or longer than the pool serves.
        byte[] Value()
        {
            written++;
            var dice = rng.Next(100);
            var length = dice < 4 ? 0 : dice < 4 + cfg.BigPercent ? s_bigLengths[rng.Next(s_bigLengths.Length)] : dice < 15 ? 8 : rng.Next(1, 40);
            var v = new byte[length];
            v.AsSpan().Fill((byte)written);
            if (length >= 4)
            {
                BinaryPrimitives.WriteInt32LittleEndian(v, written);
            }

            return v;
        }

        // Both twins load the same arrays: the pooled one copies them.
        var initial = Enumerable.Range(0, cfg.KeySpace).OrderBy(_ => rng.Next()).Take(cfg.InitialKeys).Order()
            .Select(i => new KeyValuePair<byte[], byte[]>(KeyOf(i), Value())).ToList();
        pooled.BulkLoad(initial);
        plain.BulkLoad(initial);
        if (cfg.SplitPhaseLength > 0)
        {
            // Hot counters split: their operations are staged aside, and reconciled at the phase's end.
            foreach (var db in new[] { pooled, plain })
            {
                db.SplitPhases = new Doppel.SplitPhaseTable(new Doppel.SplitPhaseOptions { PhaseLength = cfg.SplitPhaseLength, HotThreshold = 2, MaxSplitKeys = Counters }, phaseStart: db.LastAppended + 1);
            }
        }

        var piped = cfg.PremeldThreads > 0 || cfg.GroupMeld;
        var options = new PipelineOptions(cfg.PremeldThreads, cfg.Distance, cfg.GroupMeld, cfg.GroupFirst);
        var pooledPipeline = piped ? new ReferencePipeline(pooled, options) : null;
        var plainPipeline = piped ? new ReferencePipeline(plain, options) : null;
        var window = new List<(DatabaseState Pooled, DatabaseState Plain, ulong Hash)>();

        void Release((DatabaseState Pooled, DatabaseState Plain, ulong Hash) w)
        {
            if (TreeInspector.StateHash(w.Pooled.Root) != w.Hash)
            {
                Fail($"the pinned state #{w.Pooled.Sequence} changed");
            }

            pooled.Release(w.Pooled);
            plain.Release(w.Plain);
        }

        void Published()
        {
            var hash = TreeInspector.StateHash(pooled.Current.Root);
            if (hash != TreeInspector.StateHash(plain.Current.Root))
            {
                Fail($"the states after #{pooled.LastAppended} differ");
            }

            CheckPooledState(pooled.Current.Root, Fail);
            window.Add((pooled.PinCurrent(), plain.PinCurrent(), hash));
            while (window.Count > cfg.MaxLag + 1)
            {
                Release(window[0]);
                window.RemoveAt(0);
            }
        }

        static List<(long, bool, AbortCause, PipelineStage)> Decisions(IReadOnlyList<PipelineDecision> list) =>
            [.. list.Select(d => (d.Ordinal, d.Committed, d.Outcome.Cause, d.DecidedBy))];

        void Decided(List<(long, bool, AbortCause, PipelineStage)> mine, List<(long, bool, AbortCause, PipelineStage)> theirs, Pair? pair)
        {
            if (!mine.SequenceEqual(theirs))
            {
                Fail($"decisions {string.Join(", ", mine)} with the pool, {string.Join(", ", theirs)} without; {pair?.Log}");
            }

            foreach (var d in mine)
            {
                if (d.Item2)
                {
                    commits++;
                }
                else
                {
                    byCause[d.Item3] = byCause.GetValueOrDefault(d.Item3) + 1;
                }
            }
        }

        // One operation on both twins. An operation on a split key inside its phase is refused
        // before it changes anything (docs/doppel.md), by both alike; false then.
        bool Both<T>(Pair p, Func<Transaction, T> op, out T mine, out T theirs)
        {
            mine = default!;
            theirs = default!;
            bool refusedMine = false, refusedTheirs = false;
            try
            {
                mine = op(p.Pooled);
            }
            catch (SplitKeyReadException)
            {
                refusedMine = true;
            }

            try
            {
                theirs = op(p.Plain);
            }
            catch (SplitKeyReadException)
            {
                refusedTheirs = true;
            }

            if (refusedMine != refusedTheirs)
            {
                Fail($"only one twin refused a split key; {p.Log}");
            }

            if (refusedMine)
            {
                p.Log.Append("(refused) ");
            }

            return !refusedMine;
        }

        void Get(Pair p, byte[] key)
        {
            p.Log.Append($"get {Keys.Format(key)}; ");
            if (!Both(p, t => (t.TryGet(key, out var v), v), out var mine, out var theirs))
            {
                return;
            }

            if (mine.Item1 != theirs.Item1 || !mine.Item2.AsSpan().SequenceEqual(theirs.Item2))
            {
                Fail($"get {Keys.Format(key)}: {Convert.ToHexString(mine.Item2)} with the pool, {Convert.ToHexString(theirs.Item2)} without; {p.Log}");
            }

            p.Keep(mine.Item2);
        }

        void Scan(Pair p)
        {
            var low = rng.Next(cfg.KeySpace);
            byte[]? from = rng.Next(8) == 0 ? null : KeyOf(low);
            byte[]? to = rng.Next(8) == 0 ? null : KeyOf(low + rng.Next(0, 40));
            var limit = rng.Next(1, 12);
            p.Log.Append($"scan {(from is null ? "-" : Keys.Format(from))}..{(to is null ? "-" : Keys.Format(to))} limit {limit}; ");
            if (!Both(p, t => { var rows = new List<KeyValuePair<byte[], byte[]>>(); return (t.Scan(from, to, limit, rows), rows); }, out var mine, out var theirs))
            {
                return;
            }

            if (mine.Item1 != theirs.Item1 || mine.Item2.Count != theirs.Item2.Count)
            {
                Fail($"scan counts differ; {p.Log}");
            }

            for (var i = 0; i < mine.Item2.Count; i++)
            {
                var (a, b) = (mine.Item2[i], theirs.Item2[i]);
                if (!a.Key.AsSpan().SequenceEqual(b.Key) || !a.Value.AsSpan().SequenceEqual(b.Value))
                {
                    Fail($"scan row {i} differs; {p.Log}");
                }

                p.Keep(a.Value);
            }
        }

        // The pooled twin gets its own copy of the value, scribbled over once written.
        void Write(Pair p, byte[] key, byte[] value, bool insert)
        {
            p.Log.Append($"{(insert ? "insert" : "put")} {Keys.Format(key)} ({value.Length} bytes); ");
            var copy = value.ToArray();
            var done = Both(p, t =>
            {
                var given = t == p.Pooled ? copy : value;
                if (insert)
                {
                    return t.Insert(key, given);
                }

                t.Put(key, given);
                return true;
            }, out var mine, out var theirs);
            copy.AsSpan().Fill(Scribble);
            if (done && mine != theirs)
            {
                Fail($"insert results differ; {p.Log}");
            }
        }

        void Execute(Pair p, int ops)
        {
            for (var o = 0; o < ops; o++)
            {
                var key = KeyOf(rng.Next(cfg.KeySpace));
                var counter = CounterOf(rng.Next(Counters));
                switch (rng.Next(100))
                {
                    case < 25:
                        Get(p, rng.Next(8) == 0 ? counter : key);
                        break;
                    case < 45:
                        Write(p, key, Value(), insert: false);
                        break;
                    case < 53:
                        Write(p, key, Value(), insert: true);
                        break;
                    case < 63:
                        p.Log.Append($"delete {Keys.Format(key)}; ");
                        if (Both(p, t => t.Delete(key), out var deleted, out var theirs) && deleted != theirs)
                        {
                            Fail($"delete results differ; {p.Log}");
                        }

                        break;
                    case < 73:
                        Scan(p);
                        break;
                    case < 83:
                        // Bounded Adds abort when they cross; a counter's value is computed, never pooled.
                        var delta = rng.Next(-20, 40);
                        var bounded = rng.Next(3) == 0;
                        p.Log.Append($"add {delta} to {Keys.Format(counter)}{(bounded ? " in [0, 1000]" : "")}; ");
                        Both(p, t => { t.Add(counter, delta, bounded ? 0 : null, bounded ? 1000 : null); return true; }, out _, out _);
                        break;
                    case < 85:
                        // On an ordinary key: a type mismatch, unless the value is 8 bytes or absent.
                        p.Log.Append($"add 1 to {Keys.Format(key)}; ");
                        Both(p, t => { t.Add(key, 1); return true; }, out _, out _);
                        break;
                    case < 93:
                        // Often below the counter: meld keeps the very array the state holds.
                        var floor = rng.Next(0, 300);
                        p.Log.Append($"max {floor} of {Keys.Format(counter)}; ");
                        Both(p, t => { t.Max(counter, floor); return true; }, out _, out _);
                        break;
                    default:
                        // A counter written as an ordinary, pooled value.
                        Write(p, counter, OperationFold.Integer(rng.Next(0, 500)), insert: false);
                        break;
                }
            }
        }

        // Paths copied into the intention and nothing else: meld grafts them over the state's nodes.
        void Flush(Pair p)
        {
            for (var f = rng.Next(1, 5); f > 0; f--)
            {
                var key = KeyOf(rng.Next(cfg.KeySpace));
                p.Log.Append($"flush {Keys.Format(key)}; ");
                if (Both(p, t => t.Flush(key), out var mine, out var theirs) && mine != theirs)
                {
                    Fail($"flush results differ; {p.Log}");
                }
            }
        }

        void Finish(Pair p)
        {
            // Still running (its intention pins its snapshot until melded): everything it read holds.
            foreach (var (lent, copy) in p.Lent)
            {
                if (!lent.AsSpan().SequenceEqual(copy))
                {
                    Fail($"a value the running transaction read changed from {Convert.ToHexString(copy)} to {Convert.ToHexString(lent)}; {p.Log}");
                }
            }

            var mine = p.Pooled.Complete();
            var theirs = p.Plain.Complete();
            if ((mine is null) != (theirs is null))
            {
                Fail($"one twin's transaction is read-only; {p.Log}");
            }

            if (mine is null || theirs is null)
            {
                return;
            }

            pooled.Append(mine);
            plain.Append(theirs);
            if (pooledPipeline is null)
            {
                var a = pooled.Meld(mine);
                var b = plain.Meld(theirs);
                Decided([(mine.Ordinal, a.Committed, a.Cause, PipelineStage.FinalMeld)], [(theirs.Ordinal, b.Committed, b.Cause, PipelineStage.FinalMeld)], p);
            }
            else
            {
                Decided(Decisions(pooledPipeline.Process(mine)), Decisions(plainPipeline!.Process(theirs)), p);
            }

            Published();
        }

        int Lag() => rng.Next(0, Math.Min(cfg.MaxLag, window.Count - 1) + 1);

        try
        {
            Published();
            for (round = 0; round < cfg.Rounds; round++)
            {
                // Half the rounds begin every transaction on one snapshot: grafts and conflicts.
                var shared = rng.Next(2) == 0 ? Lag() : -1;
                var pairs = new List<Pair>();
                for (var n = rng.Next(1, 5); n > 0; n--)
                {
                    var (mine, theirs, _) = window[window.Count - 1 - (shared >= 0 ? shared : Lag())];
                    var isolation = (IsolationLevel)rng.Next(4);
                    var p = new Pair(pooled.BeginAt(mine, isolation), plain.BeginAt(theirs, isolation));
                    if (rng.Next(10) == 0)
                    {
                        p.Pooled.CommutativeMode = CommutativeMode.ReadModifyWrite;
                        p.Plain.CommutativeMode = CommutativeMode.ReadModifyWrite;
                    }

                    p.Log.Append($"at #{mine.Sequence}, {isolation}: ");
                    if (rng.Next(20) == 0)
                    {
                        Flush(p);
                    }
                    else
                    {
                        Execute(p, rng.Next(1, cfg.MaxOps + 1));
                    }

                    pairs.Add(p);
                }

                foreach (var p in pairs)
                {
                    Finish(p);
                }
            }

            if (pooledPipeline is not null)
            {
                // The log may end inside a pair: its first part is melded alone.
                var mine = Decisions(pooledPipeline.Flush());
                Decided(mine, Decisions(plainPipeline!.Flush()), null);
                if (mine.Count > 0)
                {
                    Published();
                }
            }

            foreach (var w in window)
            {
                Release(w);
            }

            window.Clear();
        }
        finally
        {
            // After a failure: no more checks, which would hide the first one.
            pooledPipeline?.ReleaseAll();
            plainPipeline?.ReleaseAll();
            foreach (var w in window)
            {
                pooled.Release(w.Pooled);
                plain.Release(w.Plain);
            }
        }

        // One more commit reclaims every retired state (but the last reconciled one, which the
        // database keeps pinned); both twins end alike.
        foreach (var db in new[] { pooled, plain })
        {
            using var tx = db.Begin();
            tx.Put([0xFF], [1]);
            if (!db.Commit(tx).Committed || (cfg.SplitPhaseLength == 0 && db.RetainedStates != 1))
            {
                Fail($"the last commit aborted or left {db.RetainedStates} states retained with no pin held");
            }
        }

        if (TreeInspector.StateHash(pooled.Current.Root) != TreeInspector.StateHash(plain.Current.Root))
        {
            Fail("the last states differ");
        }

        CheckPooledState(pooled.Current.Root, Fail);
        var values = pooled.Values!;
        return new TwinCounts(commits, values.Taken, values.Reused, values.Returned, (pooled.SplitPhases as Doppel.SplitPhaseTable)?.ReconciledKeys ?? 0);
    }

    /// <summary>
    /// A pooled array belongs to one key of the state (docs/value-storage.md: "an array is in a
    /// state under one key and one content version only"), and no node of the state is one whose
    /// value final meld already marked for freeing.
    /// </summary>
    private static void CheckPooledState(Node? root, Action<string> fail)
    {
        var seen = new HashSet<byte[]>(ReferenceEqualityComparer.Instance);
        var stack = new Stack<Node>();
        if (root is not null)
        {
            stack.Push(root);
        }

        while (stack.Count > 0)
        {
            var n = stack.Pop();
            if (n.PayloadDies)
            {
                fail($"key {Keys.Format(n.Key)} is in the current state with a value marked to be freed");
            }

            if (n.PayloadFromPool && (!ValuePool.Serves(n.Payload.Length) || !seen.Add(n.Payload)))
            {
                fail($"key {Keys.Format(n.Key)} holds a pooled value of {n.Payload.Length} bytes that the pool does not serve or another key holds too");
            }

            if (n.Left is not null)
            {
                stack.Push(n.Left);
            }

            if (n.Right is not null)
            {
                stack.Push(n.Right);
            }
        }
    }
}
