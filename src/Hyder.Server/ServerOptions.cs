using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree.Pipeline;

namespace Hyder.Server;

/// <summary>How one transaction server runs.</summary>
public sealed class ServerOptions
{
    /// <summary>This server's name (logs, status, broadcast handshake).</summary>
    public string ServerId { get; set; } = "server-1";

    /// <summary>
    /// The cluster settings this server expects. A new log gets them as its first record; an
    /// existing log's first record must state the same, or the server refuses to start.
    /// </summary>
    public ClusterSettings Cluster { get; set; } = new();

    /// <summary>Request limits.</summary>
    public EngineLimits Limits { get; set; } = new();

    /// <summary>Admission control: transactions appended and awaiting their outcome, at most.</summary>
    public int MaxInFlight { get; set; } = 512;

    /// <summary>How long a transaction waits for admission before it is refused (ResourceExhausted).</summary>
    public TimeSpan AdmissionTimeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Deserialization threads (n).</summary>
    public int DeserializerThreads { get; set; } = 1;

    /// <summary>Intentions read but not yet melded, at most (the pipeline's window).</summary>
    public int PipelineWindow { get; set; } = 1024;

    /// <summary>Stage threads' spinning and pinning.</summary>
    public PipelineThreading Threading { get; set; } = new();

    /// <summary>
    /// The clock every wait of the server goes through: the reader's polls and hole timeouts, the
    /// filler's idle time, catching up, maintenance periods. <see cref="TimeProvider.System"/> by
    /// default; the deterministic simulation passes its virtual clock.
    /// </summary>
    public TimeProvider TimeProvider { get; set; } = TimeProvider.System;

    /// <summary>
    /// Cooperative mode (the deterministic simulation, docs/simulation.md): the server starts no
    /// thread and uses no <c>Task.Run</c>. The reader loop starts on the caller's thread and
    /// continues wherever the log completes its reads; each intention is deserialized and
    /// submitted inline, and the pipeline runs its stages on that thread
    /// (<see cref="PipelineThreading.Cooperative"/>); outcomes are delivered after the submit that
    /// melded them; admission refuses at once instead of waiting; delays take no cancellation
    /// token. <see cref="Threading"/> and <see cref="DeserializerThreads"/> do not apply. Off by
    /// default: a production server runs threaded.
    /// </summary>
    public bool Cooperative { get; set; }

    /// <summary>
    /// With intention broadcast: take a peer's block for a position without reading the log
    /// (false, the default: a peer's block is used only when it is byte-identical to the block the
    /// log holds at that position, so the reader still reads the log and broadcast saves only the
    /// wait at the tail). The log is the authority: a peer that is wrong about a position (a bug,
    /// a forged or misdirected frame) makes a trusting server meld a block its peers do not, and
    /// diverge (docs/broadcast.md, "Trust"). Turn it on only when every peer is trusted with
    /// positions as much as with the log itself.
    /// </summary>
    public bool TrustBroadcast { get; set; }

    /// <summary>How long the reader waits at an unwritten address below the tail before filling the hole.</summary>
    public TimeSpan HoleTimeout { get; set; } = TimeSpan.FromMilliseconds(500);

    /// <summary>
    /// How long the log must have been quiet, with nothing in flight here, before the reader polls
    /// its tail only every <see cref="TailIdlePoll"/> (docs/server.md, "the reader at the tail").
    /// </summary>
    public TimeSpan TailIdleAfter { get; set; } = TimeSpan.FromSeconds(1);

    /// <summary>
    /// The reader's poll period at the tail of an idle log. A local append, a peer's broadcast block
    /// and a caller waiting for an ordinal wake it at once; only a peer's block with no broadcast
    /// and nobody here waiting for it waits up to this long. Longer saves an idle server's CPU.
    /// </summary>
    public TimeSpan TailIdlePoll { get; set; } = TimeSpan.FromMilliseconds(100);

    /// <summary>With group meld: how long the first of a pair may wait for its partner before this server appends a filler.</summary>
    public TimeSpan FillerAfter { get; set; } = TimeSpan.FromMilliseconds(2);

    /// <summary>
    /// Append a flush intention every this many ordinals (meld paper §5): it copies up to
    /// <see cref="FlushMaxNodes"/> ephemeral nodes of the state into the log, so ephemeral state
    /// stays bounded. 0 turns flushing off.
    /// </summary>
    public long FlushEvery { get; set; } = 8192;

    /// <summary>Ephemeral nodes one flush copies, at most (each with its path from the root).</summary>
    public int FlushMaxNodes { get; set; } = 256;

    /// <summary>State nodes one flush looks at to find ephemeral ones, at most (breadth first from the root).</summary>
    public int FlushScanBudget { get; set; } = 1 << 16;

    /// <summary>Write a checkpoint every this many ordinals (0: only when asked).</summary>
    public long CheckpointEvery { get; set; }

    /// <summary>
    /// Trim policy (docs/server.md, "Trimming the log"): after each checkpoint it reads, the server
    /// trims the log below the one this many checkpoints back (less <see cref="TrimMargin"/>).
    /// 0 (the default) trims only when asked (<see cref="TransactionServer.TrimAsync"/>).
    /// </summary>
    public int TrimKeepCheckpoints { get; set; }

    /// <summary>Log positions kept below the checkpoint a trim keeps, for servers that are behind it.</summary>
    public long TrimMargin { get; set; }

    /// <summary>
    /// How long a request carrying "at least ordinal N" (<c>min_ordinal</c>, docs/api.md "Read your
    /// writes") waits for this server to meld N before it is refused with Unavailable; the call's
    /// deadline ends the wait sooner. Default 5 s: a server that far behind is better left for
    /// another (the client retries Unavailable for reads and begins).
    /// </summary>
    public TimeSpan OrdinalWaitTimeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Recycle written values (docs/value-storage.md): the engine copies each written value into
    /// an array of its own value pool and reuses the array once no state, intention or outcome
    /// can reach it, so values stop dying old in generation 2. In exchange, the values in a
    /// one-shot outcome's results are lent: dispose the <see cref="TransactionOutcome"/> once they
    /// are read (the gRPC service does, after writing the response). Off by default for code that
    /// embeds the server; hyder-server and the YCSB tool's embedded target turn it on.
    /// </summary>
    public bool RecycleValues { get; set; }

    /// <summary>Start from the latest checkpoint in the log (false: replay the whole log).</summary>
    public bool RecoverFromCheckpoint { get; set; } = true;

    /// <summary>Tests: called on the final-meld thread after each ordinal, from the first one on (not for the lone meld of an unpaired group-meld ordinal when a disposed server drains its pipeline).</summary>
    internal Action<long, Tree.Meld.MeldOutcome, Tree.DatabaseState>? MeldedHook { get; set; }

    /// <summary>Tests: called once the server opened its database (split-phase table attached), before it melds anything.</summary>
    internal Action<Tree.Database>? DatabaseOpened { get; set; }

    /// <summary>Tests: called on the executor with each intention it built, before it is validated and appended.</summary>
    internal Action<Tree.Intention>? IntentionBuilt { get; set; }

    /// <summary>Test hook: called before each pipeline stage step (delay injection).</summary>
    public Action<PipelineStage, long>? StageDelay { get; set; }
}
