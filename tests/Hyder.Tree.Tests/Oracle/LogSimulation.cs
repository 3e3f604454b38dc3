using System.Buffers.Binary;
using System.Text;
using Hyder.Tree.Commutative;
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
/// <param name="CommutativePercent">
/// Share of commutative operations (0: none, and the log is exactly what it was before they
/// existed). Keys then have roles by index mod 4: counters (Add, Max, Min), escrow balances
/// (Add bounded to [0, 1000]), ordered values (OPut) and top-3 lists (TopKInsert); ordinary writes
/// write a value of the key's role (2 % of them one of another type); a tenth of the transactions
/// run their operations as read-modify-writes.
/// </param>
/// <param name="HotKeys">Half the commutative operations go to the first HotKeys keys of each role.</param>
/// <param name="SplitPhaseLength">
/// Doppel's split phases (docs/doppel.md): a phase every this many ordinals (0: off), splitting
/// up to 4 keys with at least <paramref name="SplitThreshold"/> operations in the last phase. A
/// transaction that reads a split key inside a phase is stashed (dropped here); a quarter of the
/// transactions run on the last reconciled state.
/// </param>
/// <param name="SplitThreshold">Operations in a phase that make a key split in the next.</param>
/// <param name="CornerKeys">
/// Keys of 1 to 24 bytes instead of 1- or 2-byte indexes: keys that are prefixes of others, keys
/// longer than 8 bytes sharing their first 8, the bytes 0x00 and 0xFF (still ordered by index).
/// </param>
/// <param name="CornerScans">
/// Scans with exclusive bounds, open low bounds, empty ranges, bounds outside the key space and
/// unlimited whole-tree scans, some appending to a list that already holds pairs.
/// </param>
/// <param name="RunPercent">Share of operations that are a run of 8 to 64 consecutive inserts or deletes (rebalancing).</param>
/// <param name="ChurnPercent">Share of operations that insert and delete one key (half of them insert it again).</param>
/// <param name="BigPercent">Share of transactions with 200 to 2,000 operations.</param>
/// <param name="FlushPercent">Share of transactions that only flush (copy the paths to) 1 to 4 keys (meld paper §5).</param>
/// <param name="Lockstep">
/// Every intention also goes through encode → decode into a second database, as a peer server
/// would see it, melded by a pipeline of its own: decisions and state hashes must be equal.
/// </param>
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
    bool GroupFirst = false,
    int CommutativePercent = 0,
    int HotKeys = 0,
    int SplitPhaseLength = 0,
    int SplitThreshold = 2,
    bool CornerKeys = false,
    bool CornerScans = false,
    int RunPercent = 0,
    int ChurnPercent = 0,
    int BigPercent = 0,
    int FlushPercent = 0,
    bool Lockstep = false);

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
    public int WithOperations;
    public int BoundAborts;
    public int TypeAborts;
    public int ReadModifyWrites;
    public int Stashed;
    public int SplitAborts;
    public int ReconciledAborts;
    public long StagedOperations;
    public long StagedOnly;
    public long Phases;
    public long ReconciledKeys;
    public readonly List<ulong> StateHashes = [];

    /// <summary>Decisions judged by <see cref="DefinitionOracle"/> (every commit it allows or forbids, every abort).</summary>
    public long DefinitionJudged;

    /// <summary>Aborts the isolation level's definition would have let commit, by meld's cause.</summary>
    public readonly SortedDictionary<AbortCause, long> FalseAborts = [];

    /// <summary>Of those, aborts that name a key the transaction wrote (first committer wins on every write).</summary>
    public long FalseAbortsOnOwnWrites;

    /// <summary>Of those, aborts group meld made (a second part on the first's write, both parts on one key's two versions, or a part with its partner).</summary>
    public long FalseAbortsOfGroups;

    /// <summary>Adds another run's counts of false aborts and judged decisions.</summary>
    public static void Accumulate(SortedDictionary<AbortCause, long> into, SimulationResult r)
    {
        foreach (var (cause, n) in r.FalseAborts)
        {
            into[cause] = into.GetValueOrDefault(cause) + n;
        }
    }
}

/// <summary>
/// Runs a random log through the engine and, beside it, through the reference model and the
/// brute-force validator; throws on the first disagreement with everything needed to replay it.
/// </summary>
internal static partial class LogSimulation
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

        var cornerKeys = cfg.CornerKeys ? CornerKeyTable(rng, cfg.KeySpace) : null;
        byte[] KeyOf(int i) => cornerKeys is not null ? cornerKeys[i] : keyBytes == 1 ? [(byte)i] : [(byte)(i >> 8), (byte)i];
        var writeCounter = 0;
        byte[] NewValue() => Encoding.ASCII.GetBytes($"v{++writeCounter}");
        var commutative = cfg.CommutativePercent > 0;

        // With operations, a value of the key's role; without, the classic distinct strings.
        byte[] ValueFor(int i)
        {
            if (!commutative)
            {
                return NewValue();
            }

            if (rng.Next(50) == 0)
            {
                return NewValue();
            }

            return (i % 4) switch
            {
                0 => OperationFold.Integer(rng.Next(-100, 100)),
                1 => OperationFold.Integer(rng.Next(EscrowMin, EscrowMax + 1)),
                2 => OperationFold.Ordered(rng.Next(10), NewValue()),
                _ => OperationFold.TopK([(rng.Next(10), NewValue())]),
            };
        }

        var initial = Enumerable.Range(0, cfg.KeySpace).OrderBy(_ => rng.Next()).Take(cfg.InitialKeys)
            .OrderBy(i => i).Select(i => new KeyValuePair<byte[], byte[]>(KeyOf(i), ValueFor(i))).ToList();
        db.BulkLoad(initial);
        foreach (var (k, v) in initial)
        {
            model.Write(k, v, 1);
        }

        // The peer decodes every intention from its blocks, as another server would.
        Database? peer = null;
        if (cfg.Lockstep && cfg.SplitPhaseLength == 0)
        {
            peer = new Database();
            peer.BulkLoad(initial);
        }

        Doppel.SplitPhaseTable? table = null;
        t_reconciled = [];
        t_phasesSeen = 0;
        if (cfg.SplitPhaseLength > 0)
        {
            table = new Doppel.SplitPhaseTable(new Doppel.SplitPhaseOptions { PhaseLength = cfg.SplitPhaseLength, HotThreshold = cfg.SplitThreshold, MaxSplitKeys = 4 }, phaseStart: db.LastAppended + 1);
            db.SplitPhases = table;
        }

        var window = new List<DatabaseState> { db.PinCurrent() };
        var pipelineOptions = new Pipeline.PipelineOptions(cfg.PremeldThreads, cfg.Distance, cfg.GroupMeld, cfg.GroupFirst);
        var pipeline = cfg.PremeldThreads > 0 || cfg.GroupMeld ? new Pipeline.ReferencePipeline(db, pipelineOptions) : null;
        var peerWindow = peer is null ? null : new List<DatabaseState> { peer.PinCurrent() };
        var peerPipeline = peer is not null && pipeline is not null ? new Pipeline.ReferencePipeline(peer, pipelineOptions) : null;
        var decodePool = peer is null ? null : new Memory.NodePool(Memory.NodePool.DefaultCapacity);
        long partPosition = 1L << 32;
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
                var peerSnap = peerWindow?[peerWindow.Count - 1 - lag];
                if (table is not null && rng.Next(4) == 0 && db.Reconciled is { } reconciled)
                {
                    snap = reconciled;
                }

                var iso = levels[rng.Next(levels.Length)];
                var rec = new TransactionRecord(iso, snap.Sequence);
                var local = new SortedDictionary<byte[], byte[]?>(Keys.Comparer);
                var operations = rec.Operations;
                var log = new StringBuilder();
                using var tx = db.BeginAt(snap, iso);
                var rmw = commutative && rng.Next(10) == 0;
                if (rmw)
                {
                    tx.CommutativeMode = CommutativeMode.ReadModifyWrite;
                    result.ReadModifyWrites++;
                }

                byte[]? View(byte[] k) =>
                    local.TryGetValue(k, out var v) ? v
                    : operations.TryGetValue(k, out var list) ? Lenient(list, model.ValueAt(k, snap.Sequence))
                    : model.ValueAt(k, snap.Sequence);

                // What it observed of its snapshot, for the definition oracle: not its own writes.
                void Saw(byte[] k)
                {
                    if (!local.ContainsKey(k))
                    {
                        rec.Observed.Add(k);
                    }
                }

                // A read of a key the transaction sees through its own operations depends on the
                // snapshot's version when the key was there, else (serializable) on its absence.
                void ReadOf(byte[] k)
                {
                    if (local.ContainsKey(k) || iso > IsolationLevel.RepeatableRead)
                    {
                        return;
                    }

                    if (!operations.ContainsKey(k) || model.ValueAt(k, snap.Sequence) is not null)
                    {
                        rec.Reads.Add(k);
                    }
                    else if (iso == IsolationLevel.Serializable)
                    {
                        rec.AbsentReads.Add(k);
                    }
                }

                // The executor's rules (docs/doppel.md, "The executor"), as a reader would state them.
                void Operate(byte[] k, Operation op)
                {
                    log.Append($"{op} {Keys.Format(k)}; ");
                    Invoke(tx, k, op);
                    if (operations.TryGetValue(k, out var list) && !rmw)
                    {
                        list.Add(op);
                        return;
                    }

                    byte[]? known;
                    if (local.TryGetValue(k, out known))
                    {
                        // A value the transaction wrote: applied here.
                    }
                    else if (rmw)
                    {
                        known = View(k);
                        Saw(k);
                        if (known is not null)
                        {
                            ReadOf(k);
                        }
                        else if (iso == IsolationLevel.Serializable)
                        {
                            rec.AbsentReads.Add(k);
                        }
                    }
                    else
                    {
                        operations[k] = [op];
                        return;
                    }

                    var failed = OracleValidator.Apply([op], known, out var applied) != FoldError.None;
                    if (failed)
                    {
                        rec.DoomedKeys.Add(k);
                    }

                    if (operations.TryGetValue(k, out list))
                    {
                        list.Add(known is null ? Operation.Clear() : Operation.Put(known));
                        if (!failed)
                        {
                            list.Add(Operation.Put(applied!));
                        }
                    }
                    else
                    {
                        local[k] = failed ? known : applied;
                    }
                }

                // An ordinary write (null: a delete) of a key with operations joins their list.
                void Write(byte[] k, byte[]? v)
                {
                    if (operations.TryGetValue(k, out var list))
                    {
                        list.Add(v is null ? Operation.Clear() : Operation.Put(v));
                    }
                    else
                    {
                        local[k] = v;
                    }
                }

                void InsertOf(int ki)
                {
                    var key = KeyOf(ki);
                    var v = ValueFor(ki);
                    var expected = View(key) is null;
                    log.Append($"insert {Keys.Format(key)}; ");
                    Require(tx.Insert(key, v) == expected, cfg, t, log, "insert result");
                    Saw(key);
                    if (expected)
                    {
                        // A successful insert of a key the transaction never touched saw
                        // the snapshot's absence: a read at serializable, kept if deleted again.
                        if (iso == IsolationLevel.Serializable && !local.ContainsKey(key) && !operations.ContainsKey(key))
                        {
                            rec.AbsentReads.Add(key);
                        }

                        Write(key, v);
                    }
                    else
                    {
                        ReadOf(key);
                    }
                }

                void DeleteOf(int ki)
                {
                    var key = KeyOf(ki);
                    var expected = View(key) is not null;
                    log.Append($"delete {Keys.Format(key)}; ");
                    Require(tx.Delete(key) == expected, cfg, t, log, "delete result");
                    Saw(key);
                    if (expected)
                    {
                        Write(key, null);
                    }
                    else if (iso == IsolationLevel.Serializable && !local.ContainsKey(key))
                    {
                        // A miss on a key the transaction deleted itself saw nothing of the snapshot.
                        rec.AbsentReads.Add(key);
                    }
                }

                if (cfg.FlushPercent > 0 && table is null && rng.Next(100) < cfg.FlushPercent)
                {
                    // A flush intention: paths copied, nothing read or written; it never conflicts.
                    rec.FlushOnly = true;
                    for (var f = rng.Next(1, 5); f > 0; f--)
                    {
                        var key = KeyOf(rng.Next(cfg.KeySpace));
                        log.Append($"flush {Keys.Format(key)}; ");
                        Require(tx.Flush(key) == (model.ValueAt(key, snap.Sequence) is not null), cfg, t, log, "flush result");
                    }
                }

                var ops = rec.FlushOnly ? 0 : cfg.BigPercent > 0 && rng.Next(100) < cfg.BigPercent ? rng.Next(200, 2001) : rng.Next(1, cfg.MaxOps + 1);
                try
                {
                for (var o = 0; o < ops; o++)
                {
                    var dice = rng.Next(100);
                    var ki = rng.Next(cfg.KeySpace);
                    var key = KeyOf(ki);
                    if (cfg.RunPercent > 0 && rng.Next(100) < cfg.RunPercent)
                    {
                        // Consecutive keys inserted or deleted: the tree must rebalance.
                        var insert = rng.Next(2) == 0;
                        for (int j = 0, length = rng.Next(8, 65); j < length; j++)
                        {
                            if (insert)
                            {
                                InsertOf((ki + j) % cfg.KeySpace);
                            }
                            else
                            {
                                DeleteOf((ki + j) % cfg.KeySpace);
                            }
                        }

                        continue;
                    }

                    if (cfg.ChurnPercent > 0 && rng.Next(100) < cfg.ChurnPercent)
                    {
                        // Inserted and deleted again (the absence the insert saw must stay
                        // checked), half the time inserted a third time.
                        InsertOf(ki);
                        DeleteOf(ki);
                        if (rng.Next(2) == 0)
                        {
                            InsertOf(ki);
                        }

                        continue;
                    }

                    if (commutative && rng.Next(100) < cfg.CommutativePercent)
                    {
                        if (cfg.HotKeys > 0 && rng.Next(2) == 0)
                        {
                            ki = Math.Min(cfg.KeySpace - 1, (rng.Next(cfg.HotKeys) * 4) + (ki % 4));
                            key = KeyOf(ki);
                        }

                        Operate(key, RandomOperation(rng, ki, NewValue));
                        continue;
                    }

                    if (dice < cfg.ScanPercent)
                    {
                        Scan(tx, rng, cfg, ki, KeyOf, View, model, snap.Sequence, local, rec, log, ReadOf);
                    }
                    else if (dice < cfg.ScanPercent + cfg.InsertDeletePercent)
                    {
                        if (rng.Next(2) == 0)
                        {
                            InsertOf(ki);
                        }
                        else
                        {
                            DeleteOf(ki);
                        }
                    }
                    else if (dice < cfg.ScanPercent + cfg.InsertDeletePercent + cfg.WritePercent)
                    {
                        var v = ValueFor(ki);
                        log.Append($"put {Keys.Format(key)}; ");
                        tx.Put(key, v);
                        Write(key, v);
                    }
                    else
                    {
                        var expected = View(key);
                        log.Append($"get {Keys.Format(key)}; ");
                        var found = tx.TryGet(key, out var got);
                        Require(found == expected is not null && (!found || got.AsSpan().SequenceEqual(expected)), cfg, t, log, "get result");
                        Saw(key);
                        if (found)
                        {
                            ReadOf(key);
                        }
                        else if (iso == IsolationLevel.Serializable && !local.ContainsKey(key))
                        {
                            rec.AbsentReads.Add(key);
                        }
                    }
                }

                }
                catch (SplitKeyReadException e)
                {
                    // Stashed: an executor would run it again on the next reconciled state.
                    Require(snap.SplitKeys is not null, cfg, t, log, $"a read of {Keys.Format(e.Key)} refused on a state with no split keys");
                    Require(!snap.IsReconciled, cfg, t, log, "a read refused on a reconciled state");
                    result.Stashed++;
                    continue;
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
                    Require(local.Count == 0 && operations.Count == 0, cfg, t, log, "a transaction with writes produced no intention");
                    result.ReadOnly++;
                    continue;
                }

                Require(local.Count > 0 || operations.Count > 0 || rec.FlushOnly, cfg, t, log, "a read-only transaction produced an intention");
                Require(intention.HasOperations == (operations.Count > 0 || rec.Doomed), cfg, t, log, "the intention's operations are not the transaction's");
                result.WithOperations += intention.HasOperations ? 1 : 0;
                Intention? decoded = null;
                if (peer is not null)
                {
                    // As a peer sees it: the blocks, decoded against its own copy of the snapshot.
                    var encoded = Hyder.Tree.Serialization.IntentionEncoder.Encode(intention, Hyder.Tree.Serialization.BlockFormat.DefaultBlockSize);
                    var positions = new long[encoded.Parts.Count];
                    for (var b = 0; b < positions.Length; b++)
                    {
                        positions[b] = partPosition++;
                    }

                    var final = encoded.Finish(positions);
                    decoded = Hyder.Tree.Serialization.IntentionDecoder.Decode(final.Span, encoded.Parts, peerSnap!, decodePool!);
                    peer.Append(decoded);
                }

                db.Append(intention);
                var ordinal = intention.Ordinal;
                Require(decoded is null || decoded.Ordinal == ordinal, cfg, t, log, "the peer placed the intention elsewhere");
                var expectCommit = OracleValidator.Commits(rec, model, ordinal, out var reason);
                var bruteForce = s_bruteForce.Validate(intention, db.Current);
                var decided = s_decider.Decide(intention, db.Current);
                if (decided.Committed != bruteForce.Committed)
                {
                    Fail(cfg, t, log, $"decide-only meld {decided}, the engine's brute-force validator {bruteForce}");
                }

                var entry = new Submitted(ordinal, rec, local, log, t, expectCommit, reason, bruteForce.Committed, table is not null);
                if (pipeline is null)
                {
                    var outcome = db.Meld(intention);
                    if (peer is not null)
                    {
                        var theirs = peer.Meld(decoded!);
                        Require(theirs.Committed == outcome.Committed && theirs.Cause == outcome.Cause, cfg, t, log, $"the peer decided {theirs} from the blocks, this server {outcome}");
                    }

                    Observe(table, ordinal);
                    Judge(entry, outcome, result, cfg);
                    Apply(entry, outcome, model, result, cfg);
                }
                else
                {
                    // HYDER_DUMP_INTENTIONS=1 prints the intentions of a failing step with the failure.
                    if (Environment.GetEnvironmentVariable("HYDER_DUMP_INTENTIONS") is not null)
                    {
                        t_debug = (ordinal % 2 == 1 ? "" : t_debug) + Dump(intention) + "\n";
                    }

                    var decisions = pipeline.Process(intention);
                    if (peerPipeline is not null)
                    {
                        SameDecisions(decisions, peerPipeline.Process(decoded!), cfg, t, log);
                    }

                    Observe(table, ordinal);
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
                    Check(db, model, ordinal, cfg, t, log, table);
                }

                result.StateHashes.Add(TreeInspector.StateHash(db.Current.Root));
                window.Add(db.PinCurrent());
                while (window.Count > cfg.MaxConcurrency + 1)
                {
                    db.Release(window[0]);
                    window.RemoveAt(0);
                }

                if (peer is not null)
                {
                    Require(TreeInspector.StateHash(peer.Current.Root) == result.StateHashes[^1], cfg, t, log, $"the peer's state after #{ordinal} differs");
                    peerWindow!.Add(peer.PinCurrent());
                    while (peerWindow.Count > cfg.MaxConcurrency + 1)
                    {
                        peer.Release(peerWindow[0]);
                        peerWindow.RemoveAt(0);
                    }
                }
            }

            if (pending is not null)
            {
                // The log ends inside a pair: the first is melded alone.
                var flushed = pipeline!.Flush();
                if (peerPipeline is not null)
                {
                    SameDecisions(flushed, peerPipeline.Flush(), cfg, cfg.Transactions, new StringBuilder());
                    Require(TreeInspector.StateHash(peer!.Current.Root) == TreeInspector.StateHash(db.Current.Root), cfg, cfg.Transactions, new StringBuilder(), "the peer's final state differs");
                }

                Observe(table, db.LastAppended);
                JudgeAll(null, pending, flushed, model, result, cfg);
            }

            Check(db, model, db.LastAppended, cfg, cfg.Transactions, new StringBuilder(), table);
            result.StagedOperations = table?.StagedOperations ?? 0;
            result.StagedOnly = db.FinalMeld.Counters.StagedOnly;
            result.Phases = table?.Phases ?? 0;
            result.ReconciledKeys = table?.ReconciledKeys ?? 0;
            result.Premelded = pipeline?.Premelded ?? 0;
            result.Groups = pipeline?.Groups ?? 0;
        }
        finally
        {
            pipeline?.ReleaseAll();
            peerPipeline?.ReleaseAll();
            foreach (var s in window)
            {
                db.Release(s);
            }

            foreach (var s in peerWindow ?? [])
            {
                peer!.Release(s);
            }
        }

        return result;
    }

    /// <summary>A transaction whose intention the pipeline has, with what the oracles expect of it.</summary>
    private sealed record Submitted(
        long Ordinal, TransactionRecord Rec, SortedDictionary<byte[], byte[]?> Local, StringBuilder Log, int T, bool Expect, string Reason, bool BruteForce, bool Split = false);

    /// <summary>One intention decided on its own: as the validator says, up to an imprecise range.</summary>
    private static void Judge(Submitted e, in MeldOutcome outcome, SimulationResult result, SimulationConfig cfg, string how = "")
    {
        if (SplitAbort(e, outcome, result, cfg))
        {
            result.Intentions++;
            return;
        }

        // With split phases the tree lags the side table, which the brute force does not read:
        // the oracle alone judges.
        if (e.BruteForce != outcome.Committed && !e.Split)
        {
            Fail(cfg, e.T, e.Log, $"meld {outcome}{how}, the engine's brute-force validator {(e.BruteForce ? "commits" : "aborts")}");
        }

        Expect(e, outcome, e.Expect, result, cfg, how);
    }

    private static void Expect(Submitted e, in MeldOutcome outcome, bool expect, SimulationResult result, SimulationConfig cfg, string how)
    {
        result.Intentions++;
        result.BoundAborts += outcome.Cause == AbortCause.BoundViolated ? 1 : 0;
        result.TypeAborts += outcome.Cause == AbortCause.TypeMismatch ? 1 : 0;
        result.NodesVisited += outcome.NodesVisited;
        result.EphemeralNodes += outcome.EphemeralNodesCreated;
        result.MaxConflictZone = Math.Max(result.MaxConflictZone, outcome.ConflictZoneLength);
        if (e.Rec.HasRangeReads)
        {
            result.RangeTransactions++;
        }

        if (outcome.Committed != expect)
        {
            if (expect && e.Split && ReconciledAbort(e, outcome))
            {
                result.ReconciledAborts++;
            }
            else if (!outcome.Committed && outcome.Cause == AbortCause.Phantom && e.Rec.HasRangeReads)
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
            Apply(second, d.Outcome, model, result, cfg);
            return;
        }

        Require(decisions.Count == 2 && decisions[0].Ordinal == first.Ordinal && decisions[1].Ordinal == second.Ordinal, cfg, second.T, second.Log, "a pair must be decided together");
        var d1 = decisions[0];
        var d2 = decisions[1];
        if (d1.Outcome.Cause == AbortCause.SplitPhase || d2.Outcome.Cause == AbortCause.SplitPhase)
        {
            // A group is one intention to final meld: a split-key abort of either part aborts both.
            Require(!d1.Committed && !d2.Committed, cfg, second.T, second.Log, $"a group half aborted on a split key: #{first.Ordinal} {d1.Outcome}, #{second.Ordinal} {d2.Outcome}");
            _ = SplitAbort(first, d1.Outcome, result, cfg, second) | SplitAbort(second, d2.Outcome, result, cfg, first);
            result.Intentions += 2;
            Apply(first, d1.Outcome, model, result, cfg);
            Apply(second, d2.Outcome, model, result, cfg);
            return;
        }

        var premeldFirst = !cfg.GroupFirst;
        bool e1, e2;
        var how = "";
        if (premeldFirst && (d1.DecidedBy == Pipeline.PipelineStage.Premeld || d2.DecidedBy == Pipeline.PipelineStage.Premeld))
        {
            // Premeld aborted a part before group meld: the other goes on alone.
            (e1, e2) = (first.Expect, second.Expect);
            how = " (a part aborted by premeld; the other alone)";
            Require(first.Split || (d1.Committed == first.BruteForce && d2.Committed == second.BruteForce), cfg, second.T, second.Log, $"alone: #{first.Ordinal} {d1.Outcome}, #{second.Ordinal} {d2.Outcome}, brute force {first.BruteForce}/{second.BruteForce}");
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
                // The second meets the first's writes when the first commits (operations on a key
                // both touched apply in order).
                var secondExpect = second.Expect;
                if (first.Expect && second.Rec.Operations.Count > 0)
                {
                    secondExpect = OracleValidator.Commits(second.Rec, model, second.Ordinal, out _, k => AfterFirst(first, k, model));
                }

                e1 = e2 = first.Expect && secondExpect;
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
            if (d2.DecidedBy == Pipeline.PipelineStage.FinalMeld && d1.DecidedBy == Pipeline.PipelineStage.FinalMeld && d1.Outcome.Grouped && !Overlaps(first, second))
            {
                Require(first.Split || d1.Committed == (first.BruteForce && second.BruteForce), cfg, second.T, second.Log, $"group {d1.Outcome}, brute force {first.BruteForce}/{second.BruteForce}; the first, #{first.Ordinal} ({first.Rec.Isolation} on #{first.Rec.Snapshot}{(first.Expect ? "" : ", the oracle aborts it: " + first.Reason)}): {first.Log}");
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

        Apply(first, d1.Outcome, model, result, cfg);
        Apply(second, d2.Outcome, model, result, cfg);
    }

    [ThreadStatic]
    private static List<(long Ordinal, byte[] Key)>? t_reconciled;

    [ThreadStatic]
    private static long t_phasesSeen;

    /// <summary>Records the keys a reconciliation wrote since the last call (at ordinal ≤ <paramref name="ordinal"/>).</summary>
    private static void Observe(Doppel.SplitPhaseTable? table, long ordinal)
    {
        if (table is null || table.Phases == t_phasesSeen)
        {
            return;
        }

        t_phasesSeen = table.Phases;
        foreach (var k in table.LastReconciledKeys)
        {
            t_reconciled!.Add((table.PhaseStart - 1, k));
        }
    }

    /// <summary>
    /// True for an abort on a key that a reconciliation wrote after the transaction's snapshot:
    /// the write gives the key a new version (a reader of the old one must conflict), so a
    /// transaction that wrote or read it across the phase end aborts even where the oracle, which
    /// sees no change of value at that point, would commit. Conservative, never unsafe.
    /// </summary>
    private static bool ReconciledAbort(Submitted e, in MeldOutcome outcome)
    {
        if (outcome.Committed || outcome.ConflictKey is not { } k || t_reconciled is null)
        {
            return false;
        }

        foreach (var (ordinal, key) in t_reconciled)
        {
            if (ordinal > e.Rec.Snapshot && ordinal < e.Ordinal && key.AsSpan().SequenceEqual(k))
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// True for an abort by a split key (AbortCause.SplitPhase): allowed where the oracle commits,
    /// since the oracle does not model phases, but only for a transaction that read, scanned,
    /// wrote or deleted the key the abort names (operations alone never conflict).
    /// </summary>
    private static bool SplitAbort(Submitted e, in MeldOutcome outcome, SimulationResult result, SimulationConfig cfg, Submitted? partner = null)
    {
        if (outcome.Committed || outcome.Cause != AbortCause.SplitPhase)
        {
            return false;
        }

        var k = outcome.ConflictKey!;
        Require(cfg.SplitPhaseLength > 0 && (Touches(e.Rec, k) || partner is not null && Touches(partner.Rec, k)), cfg, e.T, e.Log, $"meld aborted #{e.Ordinal} on split key {Keys.Format(k)}, which the transaction{(partner is null ? "" : " and its group partner")} did not read or write");
        result.SplitAborts++;
        return true;
    }

    private static bool Touches(TransactionRecord r, byte[] k) =>
        r.Reads.Contains(k) || r.AbsentReads.Contains(k) || r.Ranges.Any(x => x.Contains(k)) || r.Writes.ContainsKey(k) || r.WritesAfterOperations(k) || r.DoomedKeys.Contains(k);

    /// <summary>True when <paramref name="second"/> depends on a key <paramref name="first"/> wrote (reached the log).</summary>
    private static bool DependsOn(TransactionRecord second, TransactionRecord first, out byte[]? key)
    {
        key = null;

        // The first's operations change their keys' versions as writes do; so does a doomed key's write.
        var written = first.Writes.Where(p => p.Value is not null || first.WrittenExisted.Contains(p.Key)).Select(p => p.Key)
            .Concat(first.Operations.Keys).Concat(first.DoomedKeys);
        foreach (var k in written)
        {
            // Operations alone depend on nothing; a read or a checked write does.
            var depends = second.Reads.Contains(k) || second.AbsentReads.Contains(k) || second.Ranges.Any(r => r.Contains(k))
                || (second.Isolation != IsolationLevel.ReadCommitted
                    && ((second.Writes.TryGetValue(k, out var w) && (w is not null || second.WrittenExisted.Contains(k))) || second.WritesAfterOperations(k) || second.DoomedKeys.Contains(k)));
            if (depends)
            {
                key = k;
                return true;
            }
        }

        return false;
    }

    /// <summary>
    /// Judges the decision by the isolation level's definition (a commit must be allowed; an abort
    /// it allows is a false abort), then applies a commit to the model. The model holds every
    /// decision before <paramref name="e"/>'s place in the log, a group's first part included.
    /// </summary>
    private static void Apply(Submitted e, in MeldOutcome outcome, ReferenceModel model, SimulationResult result, SimulationConfig cfg)
    {
        var committed = outcome.Committed;
        var allowed = DefinitionOracle.Allows(e.Rec, model, e.Ordinal, out var why);
        result.DefinitionJudged++;
        if (committed && !allowed)
        {
            Fail(cfg, e.T, e.Log, $"meld committed #{e.Ordinal} ({e.Rec.Isolation}, snapshot #{e.Rec.Snapshot}), which its isolation level forbids: {why}");
        }

        if (!committed && allowed)
        {
            result.FalseAborts[outcome.Cause] = result.FalseAborts.GetValueOrDefault(outcome.Cause) + 1;
            if (outcome.ConflictKey is { } k && (e.Rec.Writes.ContainsKey(k) || e.Rec.WritesAfterOperations(k) || e.Rec.DoomedKeys.Contains(k)))
            {
                // First committer wins: meld checks every write's version at every level but read
                // committed, also where the transaction never observed the key.
                result.FalseAbortsOnOwnWrites++;
            }
            else if (outcome.Cause is AbortCause.GroupConflict or AbortCause.FateShared || outcome.Grouped)
            {
                // Group meld ties a pair's fates: a part aborts with its partner's conflict.
                result.FalseAbortsOfGroups++;
            }
            else
            {
                t_falseAbortSample ??= $"#{e.Ordinal} {e.Rec.Isolation} snapshot #{e.Rec.Snapshot}: {outcome}; ops: {e.Log}";
            }
        }

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

            // Operations apply to the key's value at the transaction's place in the log.
            foreach (var (k, list) in e.Rec.Operations)
            {
                if (OracleValidator.Apply(list, model.ValueAt(k, e.Ordinal - 1), out var value) != FoldError.None)
                {
                    throw new InvalidOperationException($"#{e.Ordinal} committed, but its operations on {Keys.Format(k)} fail on the model's value");
                }

                model.Write(k, value, e.Ordinal);
            }
        }
        else
        {
            result.Aborts++;
        }
    }

    private static void Scan(
        Transaction tx, Random rng, SimulationConfig cfg, int lowIndex, Func<int, byte[]> keyOf, Func<byte[], byte[]?> view,
        ReferenceModel model, long snapshot, SortedDictionary<byte[], byte[]?> local, TransactionRecord rec, StringBuilder log, Action<byte[]> readOf)
    {
        var low = keyOf(lowIndex);
        byte[]? high = rng.Next(8) == 0 ? null : keyOf(Math.Min(cfg.KeySpace - 1, lowIndex + rng.Next(1, 1 + Math.Max(2, cfg.KeySpace / 4))));
        var limit = rng.Next(1, 9);
        var range = new KeyRange(low, true, high, true);
        var prefilled = 0;
        if (cfg.CornerScans)
        {
            (range, limit, prefilled) = CornerScan(rng, low, high, limit);
        }

        log.Append($"scan {range} limit {limit}{(prefilled > 0 ? $" after {prefilled}" : "")}; ");

        var expected = new SortedDictionary<byte[], byte[]>(Keys.Comparer);
        foreach (var (k, v) in model.ContentsAt(snapshot))
        {
            if (range.Contains(k))
            {
                expected[k] = v;
            }
        }

        foreach (var k in local.Keys.Concat(rec.Operations.Keys))
        {
            if (!range.Contains(k))
            {
                continue;
            }

            if (view(k) is { } v)
            {
                expected[k] = v;
            }
            else
            {
                expected.Remove(k);
            }
        }

        var want = expected.Take(limit).ToList();
        var got = new List<KeyValuePair<byte[], byte[]>>();
        if (prefilled > 0)
        {
            // Appending to a list that already holds pairs: the limit counts only the new ones.
            var results = Enumerable.Range(0, prefilled).Select(i => new KeyValuePair<byte[], byte[]>([(byte)i], [])).ToList();
            Require(tx.Scan(range, limit, results) == results.Count - prefilled, cfg, -1, log, "scan count");
            got.AddRange(results.Skip(prefilled));
        }
        else if (cfg.CornerScans)
        {
            Require(tx.Scan(range, limit, got) == got.Count, cfg, -1, log, "scan count");
        }
        else
        {
            tx.Scan(low, high, limit, got);
        }

        Require(
            got.Count == want.Count && got.Zip(want).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)),
            cfg, -1, log, $"scan returned {got.Count} pairs, expected {want.Count}");

        foreach (var (k, _) in got)
        {
            readOf(k);
            if (!local.ContainsKey(k))
            {
                rec.Observed.Add(k);
            }
        }

        if (range.IsEmpty)
        {
            return;
        }

        var covered = got.Count == limit ? new KeyRange(range.Low, range.LowInclusive, got[^1].Key, true) : range;
        rec.ObservedRanges.Add((covered, new HashSet<byte[]>(local.Keys.Where(covered.Contains), ByteArrayComparer.Instance)));
        if (tx.Isolation == IsolationLevel.Serializable)
        {
            rec.Ranges.Add(covered);
        }
    }

    private static void Check(Database db, ReferenceModel model, long ordinal, SimulationConfig cfg, int t, StringBuilder log, Doppel.SplitPhaseTable? table)
    {
        var root = db.Current.Root;
        if (table is not null)
        {
            var current = db.Current;
            // A state of the running phase names its split keys; an older one (nothing committed
            // since the phase began) is exact, so the table has changed nothing yet.
            var ok = current.IsReconciled ? current.SplitKeys is null
                : current.Sequence >= table.PhaseStart ? ReferenceEquals(current.SplitKeys, table.SplitKeys)
                : table.ChangedKeys.Count == 0;
            Require(ok, cfg, t, log, $"state #{current.Sequence} names the wrong split keys (phase from #{table.PhaseStart})");
            foreach (var k in table.ChangedKeys)
            {
                Require(table.SplitKeys is { } split && split.Contains(k), cfg, t, log, $"key {Keys.Format(k)} changed in the table but is not split");
            }
        }

        try
        {
            TreeInspector.ValidateState(root);
        }
        catch (InvariantViolationException e)
        {
            Fail(cfg, t, log, "state invariant: " + e.Message);
        }

        var actual = TreeInspector.Contents(root);
        if (table is not null && table.ChangedKeys.Count > 0)
        {
            // Inside a split phase the state is the tree with the table's running values on top.
            var logical = new SortedDictionary<byte[], byte[]>(Keys.Comparer);
            foreach (var (k, v) in actual)
            {
                logical[k] = v;
            }

            foreach (var k in table.ChangedKeys)
            {
                table.TryGetChanged(k, out var v);
                logical[k] = v!;
            }

            actual = logical.ToList();
        }

        if (cfg.CommutativePercent > 0)
        {
            // Escrow keys get only bounded Adds and writes inside the bounds: no state may hold
            // an integer outside them, whatever committed.
            foreach (var (k, v) in actual)
            {
                var index = k.Length == 1 ? k[0] : BinaryPrimitives.ReadUInt16BigEndian(k);
                if (index % 4 == 1 && OperationFold.TryInteger(v, out var n) && n is < EscrowMin or > EscrowMax)
                {
                    Fail(cfg, t, log, $"escrow key {Keys.Format(k)} holds {n}, outside [{EscrowMin}, {EscrowMax}], after #{ordinal}");
                }
            }
        }

        var expected = model.ContentsAt(ordinal);
        if (actual.Count != expected.Count || !actual.Zip(expected).All(p => p.First.Key.AsSpan().SequenceEqual(p.Second.Key) && p.First.Value.AsSpan().SequenceEqual(p.Second.Value)))
        {
            var firstDiff = actual.Zip(expected).Select((p, i) => (p, i)).FirstOrDefault(x => !x.p.First.Key.AsSpan().SequenceEqual(x.p.Second.Key) || !x.p.First.Value.AsSpan().SequenceEqual(x.p.Second.Value));
            Fail(cfg, t, log, $"state after #{ordinal} holds {actual.Count} pairs, the model {expected.Count}; first difference at {firstDiff.i}: {(firstDiff.p.First.Key is null ? "-" : Keys.Format(firstDiff.p.First.Key))} vs {(firstDiff.p.Second.Key is null ? "-" : Keys.Format(firstDiff.p.Second.Key))}");
        }
    }

    /// <summary>The peer's pipeline must decide exactly what this server's did.</summary>
    private static void SameDecisions(IReadOnlyList<Pipeline.PipelineDecision> ours, IReadOnlyList<Pipeline.PipelineDecision> theirs, SimulationConfig cfg, int t, StringBuilder log)
    {
        Require(ours.Count == theirs.Count, cfg, t, log, $"the peer made {theirs.Count} decisions, this server {ours.Count}");
        for (var i = 0; i < ours.Count; i++)
        {
            var (a, b) = (ours[i], theirs[i]);
            Require(a.Ordinal == b.Ordinal && a.Committed == b.Committed && a.Outcome.Cause == b.Outcome.Cause && a.DecidedBy == b.DecidedBy, cfg, t, log, $"the peer decided #{b.Ordinal} {b.Outcome} by {b.DecidedBy}, this server #{a.Ordinal} {a.Outcome} by {a.DecidedBy}");
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
        throw new InvalidOperationException($"{what}\n  at transaction {t} of {cfg}\n  ops: {log}\n{t_debug}{Reconciliations()}");

    private static string Reconciliations() =>
        t_reconciled is { Count: > 0 } r ? "reconciled: " + string.Join(", ", r.TakeLast(12).Select(x => $"{Keys.Format(x.Key)}@{x.Ordinal}")) + "\n" : "";

    [ThreadStatic]
    private static string? t_debug;

    [ThreadStatic]
    private static string? t_falseAbortSample;

    /// <summary>The first false abort on this thread that is neither on a key the transaction wrote nor group meld's (then cleared).</summary>
    public static string? TakeFalseAbortSample()
    {
        var sample = t_falseAbortSample;
        t_falseAbortSample = null;
        return sample;
    }

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

            sb.Append(new string(' ', depth * 2)).Append($"{Keys.Format(n.Key)} vn={n.Vn} ssv={n.Ssv} scv={n.Scv} {n.Flags} {(n.DependencyRanges is null ? "" : string.Join(",", n.DependencyRanges))}{(n.HasOperations ? " " + OperationList.Format(n.Payload) : "")}\n");
            Walk(n.Left, depth + 1);
            Walk(n.Right, depth + 1);
        }

        Walk(i.Root, 1);
        return sb.ToString();
    }
}
