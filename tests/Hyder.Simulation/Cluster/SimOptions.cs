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

    /// <summary>Planted bug: log units acknowledge writes before their fsync (the mutation test).</summary>
    public bool PlantAckBeforeSync { get; init; }

    /// <summary>Planted bug: the last server skips this ordinal's intention (0: none).</summary>
    public long PlantSkipOrdinal { get; init; }

    /// <summary>Planted bug: every prefix trim goes this many positions past the rule's mark (0: none).</summary>
    public long PlantTrimBeyondRule { get; init; }

    /// <summary>The replay line for this run.</summary>
    public string ReplayLine => $"sim --seed {Seed} --faults {Faults.Name} --isolation {(Isolation == IsolationLevel.SnapshotIsolation ? "si" : "serializable")} --duration-ms {(long)Duration.TotalMilliseconds}";
}
