namespace Hyder.Simulation.Faults;

/// <summary>
/// How hostile a run is. Probabilities are per message (network) or per step of the fault
/// injector, which wakes every <see cref="FaultInterval"/> of virtual time.
/// </summary>
public sealed record FaultProfile
{
    /// <summary>No faults at all: the baseline.</summary>
    public static FaultProfile None { get; } = new()
    {
        Name = "none", Loss = 0, Duplication = 0, SlowMessage = 0, Partition = 0, CrashUnit = 0, CrashServer = 0,
        CrashSequencer = 0, NewEpoch = 0, BitFlip = 0, FullDisk = 0, SlowDisk = 0, SlowMeld = 0, Trim = 0,
        BroadcastLoss = 0, BroadcastDuplication = 0, BroadcastSlow = 0, BroadcastForge = 0,
    };

    /// <summary>Every fault, at rates that leave the cluster able to make progress.</summary>
    public static FaultProfile Default { get; } = new() { Name = "default" };

    /// <summary>Network faults only: loss, duplication, reordering, partitions.</summary>
    public static FaultProfile Network { get; } = None with { Name = "network", Loss = 0.03, Duplication = 0.03, SlowMessage = 0.05, Partition = 0.15 };

    /// <summary>Crashes and disk faults only.</summary>
    public static FaultProfile Crash { get; } = None with { Name = "crash", CrashUnit = 0.12, CrashServer = 0.1, CrashSequencer = 0.05, BitFlip = 0.1, FullDisk = 0.05, SlowDisk = 0.05, NewEpoch = 0.05, Trim = 0.1 };

    /// <summary>
    /// <see cref="Crash"/>, and log units that crash as a write lands, before the fsync that
    /// would cover it, so that their disks keep a torn or partial tail: what the durable mark
    /// (<c>durable.mark</c>) tells from a flipped bit in a durable slot.
    /// </summary>
    public static FaultProfile Torn { get; } = Crash with { Name = "torn", CrashMidWrite = 0.3, FlipLastWhileDown = true };

    /// <summary>
    /// Every fault of <see cref="Default"/>, and on the broadcast path forged but well-formed
    /// blocks besides lost, duplicated and slowed ones (servers broadcast in this profile).
    /// </summary>
    public static FaultProfile Broadcast { get; } = new() { Name = "broadcast", BroadcastForge = 0.05 };

    /// <summary>The profile called <paramref name="name"/>.</summary>
    public static FaultProfile Parse(string name) => name switch
    {
        "none" => None,
        "default" => Default,
        "network" => Network,
        "crash" => Crash,
        "broadcast" => Broadcast,
        "torn" => Torn,
        _ => throw new ArgumentException($"unknown fault profile '{name}' (none, default, network, crash, torn, broadcast)", nameof(name)),
    };

    /// <summary>The profile's name.</summary>
    public string Name { get; init; } = "custom";

    /// <summary>A message (request or reply) is lost; the caller sees a timeout.</summary>
    public double Loss { get; init; } = 0.02;

    /// <summary>A request is delivered twice.</summary>
    public double Duplication { get; init; } = 0.02;

    /// <summary>A message takes 5-50 ms instead of 0.05-1 ms (which also reorders it).</summary>
    public double SlowMessage { get; init; } = 0.03;

    /// <summary>Per injector step: cut two nodes apart for a while.</summary>
    public double Partition { get; init; } = 0.08;

    /// <summary>Per injector step: crash a log unit (restarted after a while from its disk).</summary>
    public double CrashUnit { get; init; } = 0.06;

    /// <summary>
    /// Per injector step: crash a log unit right after its next slot is appended, before an fsync
    /// covers it (its disk may keep, lose or tear that slot); restarted after a while. Only the
    /// <see cref="Torn"/> profile sets it, so the other profiles' seeds replay as before.
    /// </summary>
    public double CrashMidWrite { get; init; }

    /// <summary>
    /// A bit flip hits, when a chain head is down, that head's last durable slot (one that its
    /// recovery must keep as corrupt, not cut as torn). Only the <see cref="Torn"/> profile sets it.
    /// </summary>
    public bool FlipLastWhileDown { get; init; }

    /// <summary>Per injector step: crash a transaction server (restarted after a while, from the latest checkpoint).</summary>
    public double CrashServer { get; init; } = 0.05;

    /// <summary>Per injector step: crash the sequencer (restarted empty; a new epoch follows).</summary>
    public double CrashSequencer { get; init; } = 0.03;

    /// <summary>Per injector step: an administrator moves the log to a new epoch (seal + reset).</summary>
    public double NewEpoch { get; init; } = 0.03;

    /// <summary>Per injector step: flip a bit of a durable slot on a flaky unit's disk.</summary>
    public double BitFlip { get; init; } = 0.05;

    /// <summary>Per injector step: a unit's disk is full for a while.</summary>
    public double FullDisk { get; init; } = 0.03;

    /// <summary>Per injector step: a unit's fsyncs take 5-30 ms for a while.</summary>
    public double SlowDisk { get; init; } = 0.03;

    /// <summary>Per injector step: a server's meld stage stalls 2-20 ms per intention for a while.</summary>
    public double SlowMeld { get; init; } = 0.03;

    /// <summary>Per injector step: an administrator trims the log by the rule through a serving server (<c>TransactionServer.TrimAsync</c>).</summary>
    public double Trim { get; init; } = 0.05;

    /// <summary>With broadcast: a copy of a block to one peer is lost.</summary>
    public double BroadcastLoss { get; init; } = 0.02;

    /// <summary>With broadcast: a copy of a block to one peer is delivered twice.</summary>
    public double BroadcastDuplication { get; init; } = 0.02;

    /// <summary>With broadcast: a copy takes 5-50 ms instead of 0.05-1 ms (which also reorders it).</summary>
    public double BroadcastSlow { get; init; } = 0.05;

    /// <summary>With broadcast, per published block: one peer also gets a forged but well-formed block (<c>ForgeKind</c>).</summary>
    public double BroadcastForge { get; init; }

    /// <summary>How often the injector wakes.</summary>
    public TimeSpan FaultInterval { get; init; } = TimeSpan.FromMilliseconds(50);
}
