using System.Buffers.Binary;
using System.Text;
using Hyder.Tree.Meld;

namespace Hyder.Tree.Tests.Oracle;

/// <summary>The shape of one random log of concurrent transactions.</summary>
/// <param name="Seed">Drives every random choice; the same configuration always builds the same log.</param>
/// <param name="KeySpace">Distinct keys that can occur.</param>
/// <param name="InitialKeys">Keys bulk-loaded before the run.</param>
/// <param name="Transactions">Transactions executed (read-only ones never reach the log).</param>
/// <param name="MaxConcurrency">Largest snapshot lag in intentions (the conflict zone).</param>
/// <param name="MaxOps">Operations per transaction, at most.</param>
/// <param name="WritePercent">Share of puts among operations.</param>
/// <param name="InsertDeletePercent">Share of inserts and deletes (they force the asymmetric case).</param>
/// <param name="ScanPercent">Share of range scans.</param>
/// <param name="Levels">Bit mask of isolation levels to draw from (bit i = level i).</param>
/// <param name="PremeldThreads">t: premeld threads of the reference pipeline (0: final meld only).</param>
/// <param name="Distance">d: the premeld distance.</param>
public sealed record SimulationConfig(
    int Seed,
    int KeySpace,
    int InitialKeys,
    int Transactions,
    int MaxConcurrency,
    int MaxOps,
    int WritePercent,
    int InsertDeletePercent,
    int ScanPercent,
    int Levels,
    int PremeldThreads = 0,
    int Distance = 0);

/// <summary>What a simulated run saw.</summary>
public sealed class SimulationResult
{
    public int Intentions;
    public int Commits;
    public int Aborts;
    public int ReadOnly;
    public int RangeTransactions;
    public int FalseRangeAborts;
    public long Premelded;
    public long NodesVisited;
    public long EphemeralNodes;
    public long MaxConflictZone;
    public readonly List<ulong> StateHashes = [];
}

/// <summary>
/// Runs a random log through the engine and, beside it, through the reference model and the
/// brute-force validator; throws on the first disagreement with everything needed to replay it.
/// </summary>
internal static class LogSimulation
{
    [ThreadStatic]
    private static Meld.BruteForceValidator? t_bruteForce;

    private static Meld.BruteForceValidator s_bruteForce => t_bruteForce ??= new();

    [ThreadStatic]
    private static Meld.MeldOperator? t_decider;

    private static Meld.MeldOperator s_decider => t_decider ??= new(9, new Memory.NodePool(16));

    public static SimulationResult Run(SimulationConfig cfg, bool checkEveryState = true)
    {
        var rng = new Random(cfg.Seed);
        var db = new Database();
        var model = new ReferenceModel();
        var result = new SimulationResult();
        var keyBytes = cfg.KeySpace <= 256 ? 1 : 2;

        byte[] KeyOf(int i) => keyBytes == 1 ? [(byte)i] : [(byte)(i >> 8), (byte)i];
        var writeCounter = 0;
        byte[] NewValue() => Encoding.ASCII.GetBytes($"v{++writeCounter}");

        var initial = Enumerable.Range(0, cfg.KeySpace).OrderBy(_ => rng.Next()).Take(cfg.InitialKeys)
            .OrderBy(i => i).Select(i => new KeyValuePair<byte[], byte[]>(KeyOf(i), NewValue())).ToList();
        db.BulkLoad(initial);
        foreach (var (k, v) in initial)
        {
            model.Write(k, v, 1);
        }

        var window = new List<DatabaseState> { db.PinCurrent() };
        var pipeline = cfg.PremeldThreads > 0 ? new Pipeline.ReferencePipeline(db, cfg.PremeldThreads, cfg.Distance) : null;
        var levels = Enumerable.Range(0, 4).Where(b => (cfg.Levels & (1 << b)) != 0).Select(b => (IsolationLevel)b).ToArray();
        if (levels.Length == 0)
        {
            levels = [IsolationLevel.Serializable];
        }

        try
        {
            for (var t = 0; t < cfg.Transactions; t++)
            {
                var lag = rng.Next(0, Math.Min(cfg.MaxConcurrency, window.Count - 1) + 1);
                var snap = window[window.Count - 1 - lag];
                var iso = levels[rng.Next(levels.Length)];
                var rec = new TransactionRecord(iso, snap.Sequence);
                var local = new SortedDictionary<byte[], byte[]?>(Keys.Comparer);
                var log = new StringBuilder();
                using var tx = db.BeginAt(snap, iso);

                byte[]? View(byte[] k) => local.TryGetValue(k, out var v) ? v : model.ValueAt(k, snap.Sequence);

                var ops = rng.Next(1, cfg.MaxOps + 1);
                for (var o = 0; o < ops; o++)
                {
                    var dice = rng.Next(100);
                    var key = KeyOf(rng.Next(cfg.KeySpace));
                    if (dice < cfg.ScanPercent)
                    {
                        Scan(tx, rng, cfg, key, KeyOf, View, model, snap.Sequence, local, rec, log);
                    }
                    else if (dice < cfg.ScanPercent + cfg.InsertDeletePercent)
                    {
                        if (rng.Next(2) == 0)
                        {
                            var v = NewValue();
                            var expected = View(key) is null;
                            log.Append($"insert {Keys.Format(key)}; ");
                            Require(tx.Insert(key, v) == expected, cfg, t, log, "insert result");
                            if (expected)
                            {
                                local[key] = v;
                            }
                            else if (iso <= IsolationLevel.RepeatableRead && !local.ContainsKey(key))
                            {
                                rec.Reads.Add(key);
                            }
                        }
                        else
                        {
                            var expected = View(key) is not null;
                            log.Append($"delete {Keys.Format(key)}; ");
                            Require(tx.Delete(key) == expected, cfg, t, log, "delete result");
                            if (expected)
                            {
                                local[key] = null;
                            }
                            else if (iso == IsolationLevel.Serializable)
                            {
                                rec.AbsentReads.Add(key);
                            }
                        }
                    }
                    else if (dice < cfg.ScanPercent + cfg.InsertDeletePercent + cfg.WritePercent)
                    {
                        var v = NewValue();
                        log.Append($"put {Keys.Format(key)}; ");
                        tx.Put(key, v);
                        local[key] = v;
                    }
                    else
                    {
                        var expected = View(key);
                        log.Append($"get {Keys.Format(key)}; ");
                        var found = tx.TryGet(key, out var got);
                        Require(found == expected is not null && (!found || got.AsSpan().SequenceEqual(expected)), cfg, t, log, "get result");
                        if (found && !local.ContainsKey(key) && iso <= IsolationLevel.RepeatableRead)
                        {
                            rec.Reads.Add(key);
                        }
                        else if (!found && iso == IsolationLevel.Serializable)
                        {
                            rec.AbsentReads.Add(key);
                        }
                    }
                }

                foreach (var (k, v) in local)
                {
                    rec.Writes[k] = v;
                    if (model.ValueAt(k, snap.Sequence) is not null)
                    {
                        rec.WrittenExisted.Add(k);
                    }
                }

                var intention = tx.Complete();
                if (intention is null)
                {
                    Require(local.Count == 0, cfg, t, log, "a transaction with writes produced no intention");
                    result.ReadOnly++;
                    continue;
                }

                Require(local.Count > 0, cfg, t, log, "a read-only transaction produced an intention");
                db.Append(intention);
                var ordinal = intention.Ordinal;
                var expectCommit = OracleValidator.Commits(rec, model, ordinal, out var reason);
                var bruteForce = s_bruteForce.Validate(intention, db.Current);
                var decided = s_decider.Decide(intention, db.Current);
                var premeldedBefore = pipeline?.Premelded ?? 0;
                var outcome = pipeline is null ? db.Meld(intention) : pipeline.Process(intention);
                var wasPremelded = (pipeline?.Premelded ?? 0) != premeldedBefore;
                if (decided.Committed != bruteForce.Committed)
                {
                    Fail(cfg, t, log, $"decide-only meld {decided}, the engine's brute-force validator {bruteForce}");
                }

                if (bruteForce.Committed != outcome.Committed)
                {
                    Fail(cfg, t, log, $"meld {outcome}{(wasPremelded ? " (premelded)" : "")}, the engine's brute-force validator {bruteForce}");
                }

                result.Intentions++;
                result.NodesVisited += outcome.NodesVisited;
                result.EphemeralNodes += outcome.EphemeralNodesCreated;
                result.MaxConflictZone = Math.Max(result.MaxConflictZone, outcome.ConflictZoneLength);
                if (rec.HasRangeReads)
                {
                    result.RangeTransactions++;
                }

                if (outcome.Committed != expectCommit)
                {
                    if (!outcome.Committed && outcome.Cause == AbortCause.Phantom && rec.HasRangeReads)
                    {
                        result.FalseRangeAborts++;
                    }
                    else
                    {
                        Fail(cfg, t, log, $"meld {outcome}{(wasPremelded ? " (premelded)" : "")}, validator {(expectCommit ? "commits" : "aborts: " + reason)} ({iso}, snapshot #{snap.Sequence}, ordinal #{ordinal})");
                    }
                }

                if (outcome.Committed)
                {
                    result.Commits++;
                    foreach (var (k, v) in local)
                    {
                        // Inserted and deleted again by the transaction: nothing reached the log.
                        if (v is not null || rec.WrittenExisted.Contains(k))
                        {
                            model.Write(k, v, ordinal);
                        }
                    }
                }
                else
                {
                    result.Aborts++;
                }

                if (checkEveryState)
                {
                    Check(db, model, ordinal, cfg, t, log);
                }

                result.StateHashes.Add(TreeInspector.StateHash(db.Current.Root));
                window.Add(db.PinCurrent());
                while (window.Count > cfg.MaxConcurrency + 1)
                {
                    db.Release(window[0]);
                    window.RemoveAt(0);
                }
            }

            Check(db, model, db.LastAppended, cfg, cfg.Transactions, new StringBuilder());
            result.Premelded = pipeline?.Premelded ?? 0;
        }
        finally
        {
            pipeline?.ReleaseAll();
            foreach (var s in window)
            {
                db.Release(s);
            }
        }

        return result;
    }

    private static void Scan(
        Transaction tx, Random rng, SimulationConfig cfg, byte[] low, Func<int, byte[]> keyOf, Func<byte[], byte[]?> view,
        ReferenceModel model, long snapshot, SortedDictionary<byte[], byte[]?> local, TransactionRecord rec, StringBuilder log)
    {
        var lowIndex = low.Length == 1 ? low[0] : BinaryPrimitives.ReadUInt16BigEndian(low);
        byte[]? high = rng.Next(8) == 0 ? null : keyOf(Math.Min(cfg.KeySpace - 1, lowIndex + rng.Next(1, 1 + Math.Max(2, cfg.KeySpace / 4))));
        var limit = rng.Next(1, 9);
        log.Append($"scan [{Keys.Format(low)}, {(high is null ? "+inf" : Keys.Format(high))}] limit {limit}; ");
        var range = new KeyRange(low, true, high, true);

        var expected = new SortedDictionary<byte[], byte[]>(Keys.Comparer);
        foreach (var (k, v) in model.ContentsAt(snapshot))
        {
            if (range.Contains(k))
            {
                expected[k] = v;
            }
        }

        foreach (var (k, v) in local)
        {
            if (!range.Contains(k))
            {
                continue;
            }

            if (v is null)
            {
                expected.Remove(k);
            }
            else
            {
                expected[k] = v;
            }
        }

        var want = expected.Take(limit).ToList();
        var got = new List<KeyValuePair<byte[], byte[]>>();
        tx.Scan(low, high, limit, got);
        Require(
            got.Count == want.Count && got.Zip(want).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)),
            cfg, -1, log, $"scan returned {got.Count} pairs, expected {want.Count}");

        if (tx.Isolation <= IsolationLevel.RepeatableRead)
        {
            foreach (var (k, _) in got)
            {
                if (!local.ContainsKey(k))
                {
                    rec.Reads.Add(k);
                }
            }
        }

        if (tx.Isolation == IsolationLevel.Serializable)
        {
            rec.Ranges.Add(got.Count == limit ? new KeyRange(low, true, got[^1].Key, true) : range);
        }
    }

    private static void Check(Database db, ReferenceModel model, long ordinal, SimulationConfig cfg, int t, StringBuilder log)
    {
        var root = db.Current.Root;
        try
        {
            TreeInspector.ValidateState(root);
        }
        catch (InvariantViolationException e)
        {
            Fail(cfg, t, log, "state invariant: " + e.Message);
        }

        var actual = TreeInspector.Contents(root);
        var expected = model.ContentsAt(ordinal);
        if (actual.Count != expected.Count || !actual.Zip(expected).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)))
        {
            var firstDiff = actual.Zip(expected).Select((p, i) => (p, i)).FirstOrDefault(x => !x.p.First.Key.AsSpan().SequenceEqual(x.p.Second.Key) || !x.p.First.Value.AsSpan().SequenceEqual(x.p.Second.Value));
            Fail(cfg, t, log, $"state after #{ordinal} holds {actual.Count} pairs, the model {expected.Count}; first difference at {firstDiff.i}: {(firstDiff.p.First.Key is null ? "-" : Keys.Format(firstDiff.p.First.Key))} vs {(firstDiff.p.Second.Key is null ? "-" : Keys.Format(firstDiff.p.Second.Key))}");
        }
    }

    private static void Require(bool ok, SimulationConfig cfg, int t, StringBuilder log, string what)
    {
        if (!ok)
        {
            Fail(cfg, t, log, what);
        }
    }

    private static void Fail(SimulationConfig cfg, int t, StringBuilder log, string what) =>
        throw new InvalidOperationException($"{what}\n  at transaction {t} of {cfg}\n  ops: {log}");
}
