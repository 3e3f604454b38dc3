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
/// <param name="GroupMeld">Group meld pairs intentions 2k−1 and 2k (decisions are then the fate-shared ones).</param>
/// <param name="GroupFirst">With premeld too: group first, then premeld the group.</param>
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
    int Distance = 0,
    bool GroupMeld = false,
    bool GroupFirst = false);

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
    public long Groups;
    public long GroupConflicts;
    public long FateShared;
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
        var pipeline = cfg.PremeldThreads > 0 || cfg.GroupMeld
            ? new Pipeline.ReferencePipeline(db, new Pipeline.PipelineOptions(cfg.PremeldThreads, cfg.Distance, cfg.GroupMeld, cfg.GroupFirst))
            : null;
        Submitted? pending = null;
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
                if (decided.Committed != bruteForce.Committed)
                {
                    Fail(cfg, t, log, $"decide-only meld {decided}, the engine's brute-force validator {bruteForce}");
                }

                var entry = new Submitted(ordinal, rec, local, log, t, expectCommit, reason, bruteForce.Committed);
                if (pipeline is null)
                {
                    var outcome = db.Meld(intention);
                    Judge(entry, outcome, result, cfg);
                    Apply(entry, outcome.Committed, model, result);
                }
                else
                {
                    // HYDER_DUMP_INTENTIONS=1 prints the intentions of a failing step with the failure.
                    if (Environment.GetEnvironmentVariable("HYDER_DUMP_INTENTIONS") is not null)
                    {
                        t_debug = (ordinal % 2 == 1 ? "" : t_debug) + Dump(intention) + "\n";
                    }

                    var decisions = pipeline.Process(intention);
                    if (cfg.GroupMeld && ordinal % 2 == 1)
                    {
                        Require(decisions.Count == 0, cfg, t, log, "group meld decided the first of a pair before its partner arrived");
                        pending = entry;
                        continue;
                    }

                    JudgeAll(pending, entry, decisions, model, result, cfg);
                    pending = null;
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

            if (pending is not null)
            {
                // The log ends inside a pair: the first is melded alone.
                JudgeAll(null, pending, pipeline!.Flush(), model, result, cfg);
            }

            Check(db, model, db.LastAppended, cfg, cfg.Transactions, new StringBuilder());
            result.Premelded = pipeline?.Premelded ?? 0;
            result.Groups = pipeline?.Groups ?? 0;
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

    /// <summary>A transaction whose intention the pipeline has, with what the oracles expect of it.</summary>
    private sealed record Submitted(
        long Ordinal, TransactionRecord Rec, SortedDictionary<byte[], byte[]?> Local, StringBuilder Log, int T, bool Expect, string Reason, bool BruteForce);

    /// <summary>One intention decided on its own: as the validator says, up to an imprecise range.</summary>
    private static void Judge(Submitted e, in MeldOutcome outcome, SimulationResult result, SimulationConfig cfg, string how = "")
    {
        if (e.BruteForce != outcome.Committed)
        {
            Fail(cfg, e.T, e.Log, $"meld {outcome}{how}, the engine's brute-force validator {(e.BruteForce ? "commits" : "aborts")}");
        }

        Expect(e, outcome, e.Expect, result, cfg, how);
    }

    private static void Expect(Submitted e, in MeldOutcome outcome, bool expect, SimulationResult result, SimulationConfig cfg, string how)
    {
        result.Intentions++;
        result.NodesVisited += outcome.NodesVisited;
        result.EphemeralNodes += outcome.EphemeralNodesCreated;
        result.MaxConflictZone = Math.Max(result.MaxConflictZone, outcome.ConflictZoneLength);
        if (e.Rec.HasRangeReads)
        {
            result.RangeTransactions++;
        }

        if (outcome.Committed != expect)
        {
            if (!outcome.Committed && outcome.Cause == AbortCause.Phantom && e.Rec.HasRangeReads)
            {
                result.FalseRangeAborts++;
            }
            else
            {
                Fail(cfg, e.T, e.Log, $"meld {outcome}{how}, expected {(expect ? "commit" : "abort: " + e.Reason)} ({e.Rec.Isolation}, snapshot #{e.Rec.Snapshot}, ordinal #{e.Ordinal})");
            }
        }
    }

    /// <summary>
    /// The decisions of one pipeline step: one intention alone, or a pair under group meld, whose
    /// decisions must be the fate-shared ones: if the second depends on a key the first wrote,
    /// the second aborts and the first is decided alone; otherwise both commit iff both would.
    /// </summary>
    private static void JudgeAll(
        Submitted? first, Submitted second, IReadOnlyList<Pipeline.PipelineDecision> decisions, ReferenceModel model, SimulationResult result, SimulationConfig cfg)
    {
        if (first is null || decisions.Count == 1)
        {
            Require(decisions.Count == 1 && decisions[0].Ordinal == second.Ordinal, cfg, second.T, second.Log, $"expected one decision for #{second.Ordinal}, got {decisions.Count}");
            var d = decisions[0];
            Judge(second, d.Outcome, result, cfg, d.DecidedBy == Pipeline.PipelineStage.Premeld ? " (premeld)" : "");
            Apply(second, d.Committed, model, result);
            return;
        }

        Require(decisions.Count == 2 && decisions[0].Ordinal == first.Ordinal && decisions[1].Ordinal == second.Ordinal, cfg, second.T, second.Log, "a pair must be decided together");
        var d1 = decisions[0];
        var d2 = decisions[1];
        var premeldFirst = !cfg.GroupFirst;
        bool e1, e2;
        var how = "";
        if (premeldFirst && (d1.DecidedBy == Pipeline.PipelineStage.Premeld || d2.DecidedBy == Pipeline.PipelineStage.Premeld))
        {
            // Premeld aborted a part before group meld: the other goes on alone.
            (e1, e2) = (first.Expect, second.Expect);
            how = " (a part aborted by premeld; the other alone)";
            Require(d1.Committed == first.BruteForce && d2.Committed == second.BruteForce, cfg, second.T, second.Log, $"alone: #{first.Ordinal} {d1.Outcome}, #{second.Ordinal} {d2.Outcome}, brute force {first.BruteForce}/{second.BruteForce}");
        }
        else
        {
            var dependsOnFirst = DependsOn(second.Rec, first.Rec, out var key);
            if (dependsOnFirst)
            {
                (e1, e2) = (first.Expect, false);
                how = $" (second depends on the first's write of {Keys.Format(key!)})";
            }
            else
            {
                e1 = e2 = first.Expect && second.Expect;
                how = " (fate shared)";
            }

            // A scanned range the engine tracks wider than the record (a scan that stopped at its
            // limit) may see the first's write where the record does not.
            if (!dependsOnFirst && !d2.Committed && d2.Outcome.Cause == AbortCause.GroupConflict && second.Rec.HasRangeReads)
            {
                (e1, e2) = (first.Expect, false);
                result.FalseRangeAborts++;
            }

            // The group's range check fired where a record's narrower range does not: the partner
            // of a false range abort aborts with it.
            if (!dependsOnFirst && !d1.Committed && d1.Outcome.Cause == AbortCause.Phantom && e1 && (first.Rec.HasRangeReads || second.Rec.HasRangeReads))
            {
                e1 = e2 = false;
                result.FalseRangeAborts++;
            }

            // Final meld decided the group: its decision needs both parts to pass the brute force.
            if (d2.DecidedBy == Pipeline.PipelineStage.FinalMeld && d1.DecidedBy == Pipeline.PipelineStage.FinalMeld && d1.Outcome.Grouped)
            {
                Require(d1.Committed == (first.BruteForce && second.BruteForce), cfg, second.T, second.Log, $"group {d1.Outcome}, brute force {first.BruteForce}/{second.BruteForce}");
            }

            if (d1.Committed != d2.Committed && d2.Outcome.Cause != AbortCause.GroupConflict)
            {
                Fail(cfg, second.T, second.Log, $"a pair split without a group conflict: #{first.Ordinal} {d1.Outcome}, #{second.Ordinal} {d2.Outcome}");
            }
        }

        if (d2.Outcome.Cause == AbortCause.GroupConflict)
        {
            result.GroupConflicts++;
        }
        else if (d1.Outcome.Cause == AbortCause.FateShared)
        {
            result.FateShared++;
        }

        Expect(first, d1.Outcome, e1, result, cfg, how);
        Expect(second, d2.Outcome, e2, result, cfg, how);

        Apply(first, d1.Committed, model, result);
        Apply(second, d2.Committed, model, result);
    }

    /// <summary>True when <paramref name="second"/> depends on a key <paramref name="first"/> wrote (reached the log).</summary>
    private static bool DependsOn(TransactionRecord second, TransactionRecord first, out byte[]? key)
    {
        key = null;
        foreach (var (k, v) in first.Writes)
        {
            if (v is null && !first.WrittenExisted.Contains(k))
            {
                continue;
            }

            var depends = second.Reads.Contains(k) || second.AbsentReads.Contains(k) || second.Ranges.Any(r => r.Contains(k))
                || (second.Isolation != IsolationLevel.ReadCommitted && second.Writes.TryGetValue(k, out var w) && (w is not null || second.WrittenExisted.Contains(k)));
            if (depends)
            {
                key = k;
                return true;
            }
        }

        return false;
    }

    private static void Apply(Submitted e, bool committed, ReferenceModel model, SimulationResult result)
    {
        if (committed)
        {
            result.Commits++;
            foreach (var (k, v) in e.Local)
            {
                // Inserted and deleted again by the transaction: nothing reached the log.
                if (v is not null || e.Rec.WrittenExisted.Contains(k))
                {
                    model.Write(k, v, e.Ordinal);
                }
            }
        }
        else
        {
            result.Aborts++;
        }
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
        throw new InvalidOperationException($"{what}\n  at transaction {t} of {cfg}\n  ops: {log}\n{t_debug}");

    [ThreadStatic]
    private static string? t_debug;

    private static string Dump(Intention i)
    {
        var sb = new StringBuilder($"{i}: deletes [{string.Join(", ", i.Deletes.Select(d => $"{Keys.Format(d.Key)} scv={d.Scv}{(d.Blind ? " blind" : "")}"))}] ranges [{string.Join(", ", i.RootRanges)}]\n");
        void Walk(Node? n, int depth)
        {
            if (n is null)
            {
                return;
            }

            if (!i.Contains(n))
            {
                sb.Append(new string(' ', depth * 2)).Append($"(outside {Keys.Format(n.Key)} vn={n.Vn} ncv={n.Ncv} nsv={n.Nsv})\n");
                return;
            }

            sb.Append(new string(' ', depth * 2)).Append($"{Keys.Format(n.Key)} vn={n.Vn} ssv={n.Ssv} scv={n.Scv} {n.Flags} {(n.DependencyRanges is null ? "" : string.Join(",", n.DependencyRanges))}\n");
            Walk(n.Left, depth + 1);
            Walk(n.Right, depth + 1);
        }

        Walk(i.Root, 1);
        return sb.ToString();
    }
}
