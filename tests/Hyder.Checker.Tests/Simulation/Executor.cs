namespace Hyder.Checker.Tests.Simulation;

/// <summary>How the simulated database runs transactions.</summary>
public enum ExecutorMode
{
    /// <summary>Correct and strict serializable: each transaction runs alone, at its completion.</summary>
    Serial,

    /// <summary>Correct snapshot isolation: snapshot at invocation, first committer wins on write-write conflicts.</summary>
    SnapshotIsolation,

    /// <summary>Broken: snapshot at invocation, writes applied at completion with no conflict check at all.</summary>
    NoWriteConflictCheck,

    /// <summary>Broken: each transaction runs alone at completion but reads a snapshot up to a few commits old.</summary>
    StaleReads,
}

/// <summary>One simulated run: seed, size, concurrency, the executor and the workload shape.</summary>
public sealed record SimConfig(int Seed, int Transactions, int Processes, ExecutorMode Mode, WorkloadOptions Workload, double FailShare = 0.05, double InfoShare = 0.03, int StaleLag = 6)
{
    /// <summary>Short text for logs and regression cases.</summary>
    public override string ToString() =>
        $"seed {Seed}, {Transactions} txns, {Processes} processes, {Mode}, keys {Workload.ActiveKeys}, ops {Workload.MinOps}-{Workload.MaxOps}, lists {Workload.Lists}, registers {Workload.Registers}";
}

/// <summary>
/// A simulated run's history, the register version order the store installed (what a database's
/// log would tell), and how many committed transactions exercised the executor's bug: read a key,
/// then wrote it, although another write to it had committed after their snapshot (a lost update
/// first-committer-wins would have prevented).
/// </summary>
public sealed record SimRun(History History, IReadOnlyDictionary<long, IReadOnlyList<long>> RegisterOrder, int LostUpdates);

/// <summary>
/// Runs random transactions from <see cref="TxnGenerator"/> on processes that invoke and
/// complete in a random interleaving, against a <see cref="VersionedStore"/>, and records the
/// history a client would see. Some transactions fail (nothing applied) or end indeterminate
/// (applied or not, at random).
/// </summary>
public static class Executor
{
    public static SimRun Run(SimConfig c)
    {
        var random = new Random(c.Seed);
        var generator = new TxnGenerator(c.Workload, c.Seed ^ 0x5A5A5A5A);
        var store = new VersionedStore();
        var history = new HistoryBuilder();
        var outstanding = new (Mop[] Mops, long Snapshot)?[c.Processes];
        var invoked = 0;
        var busy = 0;
        var lostUpdates = 0;
        while (invoked < c.Transactions || busy > 0)
        {
            var p = random.Next(c.Processes);
            if (outstanding[p] is not { } txn)
            {
                if (invoked < c.Transactions)
                {
                    var mops = generator.Next();
                    outstanding[p] = (mops, store.Seq);
                    history.Invoke(p, mops);
                    invoked++;
                    busy++;
                }

                continue;
            }

            outstanding[p] = null;
            busy--;
            lostUpdates += Complete(c, random, store, history, p, txn.Mops, txn.Snapshot);
        }

        return new SimRun(history.Build(), store.RegisterOrder(), lostUpdates);
    }

    private static int Complete(SimConfig c, Random random, VersionedStore store, HistoryBuilder history, int p, Mop[] mops, long invokedAt)
    {
        if (random.NextDouble() < c.FailShare)
        {
            history.Fail(p);
            return 0;
        }

        var snapshot = c.Mode switch
        {
            ExecutorMode.Serial => store.Seq,
            ExecutorMode.StaleReads => Math.Max(0, store.Seq - random.Next(c.StaleLag + 1)),
            _ => invokedAt,
        };
        var writes = mops.Where(m => m.IsWrite).ToArray();
        if (c.Mode == ExecutorMode.SnapshotIsolation && store.WrittenSince(writes, snapshot))
        {
            history.Fail(p);
            return 0;
        }

        var done = store.Execute(mops, snapshot);
        if (random.NextDouble() < c.InfoShare)
        {
            if (random.Next(2) == 0)
            {
                store.Commit(writes);
            }

            history.Info(p);
            return 0;
        }

        var readThenWritten = writes.Where(w => mops.TakeWhile(m => m != w).Any(m => !m.IsWrite && m.IsList == w.IsList && m.Key == w.Key));
        var lost = store.WrittenSince(readThenWritten, snapshot) ? 1 : 0;
        store.Commit(writes);
        history.Ok(p, done);
        return lost;
    }
}
