using Hyder.Simulation.Faults;
using Hyder.Tree;

namespace Hyder.Simulation.Cluster;

/// <summary>The shape of one simulated run; the seed decides everything else.</summary>
public sealed record SimOptions
{
    /// <summary>Drives every random choice of the run.</summary>
    public long Seed { get; init; }

    /// <summary>Replica chains the log stripes over.</summary>
    public int Chains { get; init; } = 2;

    /// <summary>Replicas per chain.</summary>
    public int Replicas { get; init; } = 2;

    /// <summary>Transaction servers.</summary>
    public int Servers { get; init; } = 3;

    /// <summary>Client processes per server.</summary>
    public int ClientsPerServer { get; init; } = 2;

    /// <summary>Virtual time during which clients start transactions.</summary>
    public TimeSpan Duration { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>The isolation level of every transaction (and the model the history is checked against).</summary>
    public IsolationLevel Isolation { get; init; } = IsolationLevel.Serializable;

    /// <summary>Which faults, how often.</summary>
    public FaultProfile Faults { get; init; } = FaultProfile.Default;

    /// <summary>Block size of the log (and the intentions).</summary>
    public int BlockSize { get; init; } = 4096;

    /// <summary>Echo every trace line.</summary>
    public bool Verbose { get; init; }

    /// <summary>Where verbose lines go.</summary>
    public TextWriter? Output { get; init; }

    /// <summary>
    /// Each server asks for a checkpoint every this many ordinals (0: never), so barriers,
    /// checkpoint writes, trims and restarts from checkpoints run: with three servers a barrier
    /// comes every few ordinals, and a run of about 40 ordinals writes several checkpoints.
    /// </summary>
    public long CheckpointEvery { get; init; } = 10;

    /// <summary>Each server appends a flush intention every this many ordinals (0: never).</summary>
    public long FlushEvery { get; init; } = 50;

    /// <summary>
    /// Clients and faults stop once the clients committed this many transactions (0: they run
    /// for <see cref="Duration"/>, which is then only the cap).
    /// </summary>
    public int CommitTarget { get; init; }

    /// <summary>
    /// After a refusal of a server that is not serving (down, or starting), a client waits this
    /// to twice this before its next transaction, on top of the usual 1-5 ms (zero: no wait).
    /// </summary>
    public TimeSpan RefusalBackoff { get; init; }

    /// <summary>The long mode (<see cref="LongRun"/>): in the replay line as <c>--long</c>.</summary>
    public bool Long { get; init; }

    /// <summary>
    /// The long mode: the same fault profile (so the same faults per second of virtual time and
    /// the same mix), clients and faults until 1,000 transactions committed (at most 300 s of
    /// virtual time), and a checkpoint every 100 ordinals per server instead of 10, since a
    /// barrier every few ordinals aborts (<c>SnapshotBeforeCheckpoint</c>) most update
    /// transactions whose commit waits out a fault (docs/simulation.md, "Long seeds").
    /// </summary>
    public static SimOptions LongRun(long seed, FaultProfile faults) => new()
    {
        Seed = seed,
        Faults = faults,
        Long = true,
        CommitTarget = 1000,
        Duration = TimeSpan.FromSeconds(300),
        CheckpointEvery = 100,
        RefusalBackoff = TimeSpan.FromMilliseconds(20),
    };

    /// <summary>
    /// Servers broadcast their intention blocks to each other (<see cref="SimBroadcast"/>), with
    /// the profile's broadcast faults; <c>--broadcast</c> in the replay line.
    /// </summary>
    public bool Broadcast { get; init; }

    /// <summary>
    /// Servers take peers' blocks without checking them against the log
    /// (<c>ServerOptions.TrustBroadcast</c>); <c>--trust-broadcast</c> in the replay line.
    /// </summary>
    public bool TrustBroadcast { get; init; }

    /// <summary>
    /// Split phases (Doppel) on: the servers run with <c>Cluster:SplitPhase</c> (a length, a hot
    /// threshold and maybe a labelled key drawn from the seed), and half the transactions also add
    /// to (or read) a few hot counters (docs/simulation.md, "Split phases, stripes, unit replacement").
    /// </summary>
    public bool SplitPhases { get; init; }

    /// <summary>Stripes: the administrator adds chains (<c>LogAdmin.AddStripeAsync</c>) while the load runs.</summary>
    public bool Stripes { get; init; }

    /// <summary>Unit replacement: a unit dies for good and the administrator replaces it (<c>LogAdmin.ReplaceUnitAsync</c>) while the load runs.</summary>
    public bool ReplaceUnits { get; init; }

    /// <summary>Planted bug: log units acknowledge writes before their fsync (the mutation test).</summary>
    public bool PlantAckBeforeSync { get; init; }

    /// <summary>Planted bug: unit recovery ignores the durable mark and cuts every bad slot after the last intact one.</summary>
    public bool PlantIgnoreDurableMark { get; init; }

    /// <summary>Planted bug: the last server skips this ordinal's intention (0: none).</summary>
    public long PlantSkipOrdinal { get; init; }

    /// <summary>Planted bug: every prefix trim goes this many positions past the rule's mark (0: none).</summary>
    public long PlantTrimBeyondRule { get; init; }

    /// <summary>The replay line for this run.</summary>
    public string ReplayLine => $"sim --seed {Seed} --faults {Faults.Name} --isolation {(Isolation == IsolationLevel.SnapshotIsolation ? "si" : "serializable")} --duration-ms {(long)Duration.TotalMilliseconds}{(Long ? " --long" : "")}{(Broadcast ? " --broadcast" : "")}{(TrustBroadcast ? " --trust-broadcast" : "")}{(SplitPhases ? " --split-phases" : "")}{(Stripes ? " --stripes" : "")}{(ReplaceUnits ? " --replace-units" : "")}";
}
