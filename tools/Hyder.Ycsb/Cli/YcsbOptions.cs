using System.CommandLine;

namespace Hyder.Ycsb.Cli;

/// <summary>Every option of the <c>load</c> and <c>run</c> commands; docs/ycsb.md describes each.</summary>
internal static class YcsbOptions
{
    public static readonly Option<string?> Target = new("--target")
    {
        Description = "What to drive: embedded (the default: a Hyder cluster in this process, in a temporary directory unless --data), postgres, or memory (the reference target for tests). --connect drives a running Hyder cluster instead.",
    };

    public static readonly Option<string?> Connect = new("--connect")
    {
        Description = "A running Hyder transaction server: http://host:port, or a Hyder.Client connection string (\"Endpoint=http://127.0.0.1:7300;Timeout=30\"). This process is then a client only and turns its thread pool's spin off (docs/ycsb.md).",
    };

    public static readonly Option<int> Servers = new("--servers") { Description = "Transaction servers of the embedded cluster, all on one log (sessions go to them in turn).", DefaultValueFactory = _ => 1 };

    public static readonly Option<int> PremeldThreads = new("--premeld-threads") { Description = "Premeld threads t of the embedded cluster (0: no premeld; Hyder II §3).", DefaultValueFactory = _ => 0 };

    public static readonly Option<int> PremeldDistance = new("--distance") { Description = "Premeld distance d (with --premeld-threads; default 2).", DefaultValueFactory = _ => 2 };

    public static readonly Option<bool> GroupMeld = new("--group-meld") { Description = "Group meld in the embedded cluster (Hyder II §4)." };

    public static readonly Option<bool> Commutative = new("--commutative") { Description = "Send Add (incr1, like, stock) to the embedded cluster as Hyder's commutative operation, which never conflicts with another Add, instead of a read-modify-write (docs/doppel.md)." };

    public static readonly Option<int> SplitPhase = new("--split-phase") { Description = "Doppel's split phases in the embedded cluster: a phase every N ordinals, hot keys' operations staged beside the tree and reconciled at its end (with --commutative; docs/doppel.md). Default 0: off.", DefaultValueFactory = _ => 0 };

    public static readonly Option<int> HotThreshold = new("--hot-threshold") { Description = "With --split-phase: operations on a key in a phase that make it split in the next (default 64).", DefaultValueFactory = _ => 64 };

    public static readonly Option<string?> Data = new("--data") { Description = "Keep the embedded cluster's log in this directory (kept after the run; a later run without --load continues on it)." };

    public static readonly Option<string> Fsync = new("--fsync")
    {
        Description = "Embedded log: group (acknowledge an append after a group-commit fsync) or none (after the page cache: survives a process crash, not a power loss).",
        DefaultValueFactory = _ => "group",
    };

    public static readonly Option<int> CommitDelay = new("--commit-delay-us")
    {
        Description = $"Embedded log: microseconds a busy group commit waits for more appends before its fsync, when the previous fsync covered at least {Hyder.Log.Units.LogUnitOptions.DefaultCommitSiblings} and the process has work queued (0: never; default 200, 0 on Windows).",
        DefaultValueFactory = _ => (int)Hyder.Log.Units.LogUnitOptions.EmbeddedCommitDelay.TotalMicroseconds,
    };

    public static readonly Option<int> PageCacheSlots = new("--page-cache-slots")
    {
        Description = $"Embedded log: how many of the newest durable slots stay in the page cache; older ones are dropped after each group-commit fsync (Linux; default {Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots}; 0: leave the page cache to the kernel).",
        DefaultValueFactory = _ => Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots,
    };

    public static readonly Option<int> FinalMeldNice = new("--final-meld-nice")
    {
        Description = $"Embedded: the Linux nice value (-20..19) each server's final-meld thread asks for while the stages block (default 0: leave it at the process's; the main job asks for {Hyder.Tree.Pipeline.PipelineThreading.RaisedFinalMeldNice}; a raised thread also outranks other processes on the machine; below 0 needs CAP_SYS_NICE or RLIMIT_NICE).",
        DefaultValueFactory = _ => 0,
    };

    public static readonly Option<string?> Postgres = new("--pg") { Description = "PostgreSQL connection string (with --target postgres), e.g. \"Host=127.0.0.1;Username=u;Password=p;Database=d\"." };

    public static readonly Option<string> TablePrefix = new("--table-prefix") { Description = "Prefix of the PostgreSQL table of each key space.", DefaultValueFactory = _ => "ycsb_" };

    public static readonly Option<string> Workload = new("--workload")
    {
        Description = "a-f (YCSB core), tx (Hyder: reads + writes per transaction), incr1 or like (Doppel), stock (bounded Adds).",
        DefaultValueFactory = _ => "a",
    };

    public static readonly Option<string?> Distribution = new("--distribution") { Description = "Key distribution: uniform, zipfian, hotspot, latest (default: the workload's)." };

    public static readonly Option<double> ZipfianConstant = new("--zipfian-constant") { Description = "θ of the zipfian and latest distributions, 0 < θ < 1.", DefaultValueFactory = _ => 0.99 };

    public static readonly Option<double> HotspotDataFraction = new("--hotspot-data-fraction") { Description = "Share of the keys that is hot.", DefaultValueFactory = _ => 0.2 };

    public static readonly Option<double?> HotspotOperationFraction = new("--hotspot-op-fraction") { Description = "Share of the operations on hot keys (default 1 - data fraction, as Hyder II §6.4.5)." };

    public static readonly Option<long> RecordCount = new("--record-count") { Description = "Records the load phase inserts (per key space).", DefaultValueFactory = _ => 100_000 };

    public static readonly Option<int> KeySize = new("--key-size") { Description = "Key bytes (4-7 hold 2^32 key numbers, 8 or more 2^63).", DefaultValueFactory = _ => 4 };

    public static readonly Option<int> ValueSize = new("--value-size") { Description = "Value bytes of ordinary records.", DefaultValueFactory = _ => 1024 };

    public static readonly Option<string> InsertOrder = new("--insert-order") { Description = "hashed (keys scattered, YCSB's default) or ordered.", DefaultValueFactory = _ => "hashed" };

    public static readonly Option<int> MaxScanLength = new("--max-scan-length") { Description = "Longest scan (lengths uniform in 1..N).", DefaultValueFactory = _ => 100 };

    public static readonly Option<int> Reads = new("--reads") { Description = "Reads per transaction (tx).", DefaultValueFactory = _ => 8 };

    public static readonly Option<int> Writes = new("--writes") { Description = "Writes per transaction (tx).", DefaultValueFactory = _ => 2 };

    public static readonly Option<double> ReadOnlyShare = new("--read-only-share") { Description = "Share of read-only transactions (tx).", DefaultValueFactory = _ => 0.0 };

    public static readonly Option<string> Isolation = new("--isolation")
    {
        Description = "serializable, repeatable-read, snapshot or read-committed.",
        DefaultValueFactory = _ => "serializable",
    };

    public static readonly Option<double> HotShare = new("--hot-share") { Description = "Share of transactions that increment the hot counter (incr1).", DefaultValueFactory = _ => 0.1 };

    public static readonly Option<double> LikeAlpha = new("--like-alpha") { Description = "Zipf exponent of page popularity (like).", DefaultValueFactory = _ => 1.4 };

    public static readonly Option<double> WriteShare = new("--write-share") { Description = "Share of write transactions (like, stock).", DefaultValueFactory = _ => 0.5 };

    public static readonly Option<long> StockCap = new("--stock-cap") { Description = "Most units an item holds: restocks are Add(+n, max: cap) (stock).", DefaultValueFactory = _ => 100 };

    public static readonly Option<double> RestockShare = new("--restock-share") { Description = "Share of write transactions that restock; the rest are orders, Add(-q, min: 0) (stock).", DefaultValueFactory = _ => 0.1 };

    public static readonly Option<int> Threads = new("--threads") { Description = "Worker threads.", DefaultValueFactory = _ => 1 };

    public static readonly Option<int> InFlight = new("--in-flight") { Description = "Transactions in flight per thread (each on its own session).", DefaultValueFactory = _ => 1 };

    public static readonly Option<double> TargetThroughput = new("--target-throughput") { Description = "Transactions per second over all threads; 0 = unlimited.", DefaultValueFactory = _ => 0.0 };

    public static readonly Option<double> Warmup = new("--warmup") { Description = "Seconds run before measuring (run).", DefaultValueFactory = _ => 0.0 };

    public static readonly Option<double?> Duration = new("--duration") { Description = "Seconds measured (run; default 10 unless --operations is given)." };

    public static readonly Option<long?> Operations = new("--operations") { Description = "Transactions measured (run)." };

    public static readonly Option<ulong> Seed = new("--seed") { Description = "Seed of every random stream.", DefaultValueFactory = _ => 1UL };

    public static readonly Option<int> Retries = new("--retries") { Description = "Retries of an aborted transaction before it is given up.", DefaultValueFactory = _ => 10 };

    public static readonly Option<double> StatusInterval = new("--status-interval") { Description = "Seconds between status lines.", DefaultValueFactory = _ => 2.0 };

    public static readonly Option<int> LoadBatch = new("--load-batch") { Description = "Records per load transaction.", DefaultValueFactory = _ => 100 };

    public static readonly Option<bool> OneShot = new("--one-shot") { Description = "Send each transaction that only reads and updates records (tx, a, b, c) as one request, Hyder's one-shot Execute (begin, operations and commit in one round trip), instead of an interactive transaction with one call per operation (Hyder targets; the report then times only whole transactions)." };

    public static readonly Option<bool> NoPipeline = new("--no-pipeline") { Description = "--connect without --one-shot: send an interactive transaction's operations one at a time, each awaited before the next is sent (strict round trips), instead of pipelining its independent reads (sent together, then awaited) and then its writes with the commit behind them. Transactions whose operations depend on earlier results (insert, read-modify-write, counters, scans) always go one at a time." };

    public static readonly Option<bool> Multiplex = new("--multiplex") { Description = "--connect with --one-shot: send the one-shot transactions of all sessions on one shared ExecuteStream call (Hyder.Client's Multiplex=true), answered by id as they complete, instead of a unary Execute call each; the per-call costs of HTTP/2 and gRPC are paid once." };

    public static readonly Option<bool> Load = new("--load") { Description = "Run the load phase first, in this process (needed by --target memory, and by --target embedded without --data)." };

    public static readonly Option<string?> Json = new("--json") { Description = "Also write the report as JSON to this file." };

    public static readonly Option<string?> Csv = new("--csv") { Description = "Also write the report as CSV to this file." };

    /// <summary>Options both commands take.</summary>
    public static readonly Option[] Common =
    [
        Target, Connect, Servers, PremeldThreads, PremeldDistance, GroupMeld, Commutative, SplitPhase, HotThreshold, Data, Fsync, CommitDelay, PageCacheSlots, FinalMeldNice, Postgres, TablePrefix, Workload, Distribution, ZipfianConstant, HotspotDataFraction, HotspotOperationFraction,
        RecordCount, KeySize, ValueSize, InsertOrder, MaxScanLength, Reads, Writes, ReadOnlyShare, Isolation, HotShare, LikeAlpha,
        WriteShare, StockCap, RestockShare, Threads, InFlight, TargetThroughput, Seed, Retries, StatusInterval, LoadBatch, Json, Csv,
    ];

    /// <summary>Options only <c>run</c> takes.</summary>
    public static readonly Option[] RunOnly = [Warmup, Duration, Operations, Load, OneShot, NoPipeline, Multiplex];

    static YcsbOptions()
    {
        Target.AcceptOnlyFromAmong("postgres", "memory", "embedded");
        Fsync.AcceptOnlyFromAmong("group", "none");
        Workload.AcceptOnlyFromAmong("a", "b", "c", "d", "e", "f", "tx", "incr1", "like", "stock");
        Distribution.AcceptOnlyFromAmong("uniform", "zipfian", "hotspot", "latest");
        InsertOrder.AcceptOnlyFromAmong("hashed", "ordered");
        Isolation.AcceptOnlyFromAmong("serializable", "repeatable-read", "snapshot", "read-committed");
    }
}
