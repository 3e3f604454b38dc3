using Hyder.Log;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Storage;
using Hyder.Log.Units;
using Hyder.Simulation.Faults;
using Hyder.Simulation.Runtime;
using Hyder.Tree.Pipeline;

namespace Hyder.Simulation.Cluster;

/// <summary>
/// The whole cluster in one process on the deterministic scheduler: log units (real
/// <see cref="LogUnit"/>s over simulated disks), the sequencer (a real <see cref="Sequencer"/>),
/// the projection store, transaction servers (production <c>TransactionServer</c>s in cooperative
/// mode, <see cref="ServerNode"/>), the administrator that
/// moves the log to new epochs, the clients, and the fault injector.
/// </summary>
internal sealed partial class SimCluster
{
    private const string SequencerName = "seq";
    private const string AdminName = "admin";
    private readonly TrackingProjectionStore _store = new();
    private readonly List<string> _units = [];
    private readonly Dictionary<string, DiskImage> _disks = new(StringComparer.Ordinal);
    private readonly Dictionary<string, (CheckedUnit Unit, SimDisk Disk)?> _live = new(StringComparer.Ordinal);
    private readonly Dictionary<string, ServerNode?> _servers = new(StringComparer.Ordinal);
    private readonly Dictionary<string, TimeSpan> _meldStalls = new(StringComparer.Ordinal);
    private readonly PipelineOptions _pipeline;
    private readonly HashSet<string> _behindTrim = new(StringComparer.Ordinal);
    private Sequencer? _sequencer;
    private bool _reconfiguring;

    public SimCluster(SimOptions options)
    {
        Options = options;
        Scheduler = new SimScheduler(options.Seed);
        Trace = new Trace(Scheduler, options.Verbose, options.Output);
        Network = new SimNetwork(Scheduler, options.Faults, Trace);
        Invariants = new Invariants(this);

        // The meld pipeline's shape comes from the seed: premeld off, or t threads at distance d;
        // group meld on or off.
        var t = Scheduler.Random.Next(3);
        var d = t == 0 ? 0 : 1 + Scheduler.Random.Next(3);
        var group = Scheduler.Random.Next(2) == 1;
        _pipeline = new PipelineOptions(t, d, group);

        // The trim policy too: off, or every server trims whenever it reads a checkpoint, keeping 1 or 2.
        TrimPolicy = Scheduler.Random.Next(3);
        // Every other seed keeps the smallest state window (16), so states are reclaimed within a
        // run's few hundred ordinals: displaced nodes and recycled values go back to their pools
        // while transactions, leases and peers still read (docs/value-storage.md). Taken from
        // the seed, not the random stream, so every other choice of a seed stays as it was.
        var window = options.Seed % 2 == 0 ? 16 : new Hyder.Server.Cluster.ClusterSettings().StateWindow;
        Settings = WithSplitPhases(new Hyder.Server.Cluster.ClusterSettings { PremeldThreads = t, Distance = d, GroupMeld = group, BlockSize = options.BlockSize, StateWindow = window });
        for (var c = 0; c < options.Chains; c++)
        {
            for (var r = 0; r < options.Replicas; r++)
            {
                var name = $"u{c}{r}";
                _units.Add(name);
                var disk = new DiskImage(name, options.BlockSize) { AckBeforeSync = options.PlantAckBeforeSync, IgnoreMark = options.PlantIgnoreDurableMark };
                disk.OnDurable = (image, _, slot) => Invariants.Durable(image.Name, slot, image.BlockSize);
                _disks[name] = disk;
                Network.Register(name, () => _live[name]?.Unit);
                StartUnit(name);
            }
        }

        _sequencer = new Sequencer();
        Network.Register(SequencerName, () => _sequencer);
        for (var s = 0; s < options.Servers; s++)
        {
            _servers[$"s{s}"] = null;
        }
    }

    public SimOptions Options { get; }

    public SimScheduler Scheduler { get; }

    public Trace Trace { get; }

    public SimNetwork Network { get; }

    public Invariants Invariants { get; }

    /// <summary>The first violation found, if any.</summary>
    public string? Failure { get; private set; }

    /// <summary>The step at which it was found.</summary>
    public long FailureStep { get; private set; }

    public string LastServerName => $"s{Options.Servers - 1}";

    public PipelineOptions Pipeline => _pipeline;

    /// <summary>The servers' <c>TrimKeepCheckpoints</c> (0: no policy trims; the administrator's still run).</summary>
    public int TrimPolicy { get; }

    /// <summary>A server stopped because it had to read a trimmed position: its next incarnation must start from a checkpoint.</summary>
    public void BehindTrim(string name) => _behindTrim.Add(name);

    /// <summary>A server serves: one that was behind the trim must have started from a checkpoint.</summary>
    public void Serving(ServerNode server, long? fromCheckpoint)
    {
        if (fromCheckpoint is not null)
        {
            Stats.CheckpointRestarts++;
        }

        if (_behindTrim.Remove(server.Name) && fromCheckpoint is null)
        {
            Violation($"{server.Name} was behind the trim, and its next incarnation serves without having started from a checkpoint");
        }
    }

    /// <summary>The cluster settings every server runs (the first one writes them as the log's first record).</summary>
    public Hyder.Server.Cluster.ClusterSettings Settings { get; }

    public SimStats Stats { get; } = new();

    public void Violation(string message)
    {
        Trace.Add("VIOLATION " + message);
        if (Failure is null)
        {
            Failure = message;
            FailureStep = Scheduler.Steps;
        }
    }

    /// <summary>The chain that holds <paramref name="address"/> in the latest projection (stripes added, units replaced).</summary>
    public IReadOnlyList<string> ChainOf(long address) => _store.Latest is { } p
        ? p.ChainFor(address)
        : [.. _units.Skip((int)(address % Options.Chains) * Options.Replicas).Take(Options.Replicas)];

    /// <summary>Every intact durable data slot on every disk, by (unit, address).</summary>
    public Dictionary<(string Unit, long Address), byte[]> DurableBlocks()
    {
        var held = new Dictionary<(string, long), byte[]>();
        foreach (var (name, disk) in _disks)
        {
            for (var i = 0; i < disk.Durable && i < disk.Slots.Count; i++)
            {
                var slot = disk.Slots[i];
                if (SlotHeader.Check(slot, disk.BlockSize, out var kind, out var address, out var length) == SlotCheck.Ok && kind == SlotKind.Data)
                {
                    held[(name, address)] = slot.AsSpan(SlotHeader.Size, length).ToArray();
                }
            }
        }

        return held;
    }

    public TimeSpan MeldStall(string server) => _meldStalls.GetValueOrDefault(server);

    public LogClientOptions ClientOptions() => new()
    {
        TimeProvider = Scheduler.Time,
        OperationTimeout = TimeSpan.FromSeconds(5),
    };

    public async Task BootstrapAsync()
    {
        var admin = new LogAdmin(_store, Network.ConnectorFor(AdminName), timeProvider: Scheduler.Time);
        var chains = Enumerable.Range(0, Options.Chains).Select(c => (IReadOnlyList<string>)ChainOf(c)).ToList();
        await admin.BootstrapAsync(new Projection
        {
            Epoch = 1,
            BlockSize = Options.BlockSize,
            Sequencer = SequencerName,
            Ranges = [new LayoutRange { Start = 0, Chains = chains }],
        });
        // The first server to start writes the cluster settings at position 0 (TransactionServer.StartAsync).
        Trace.Add($"bootstrapped: {Options.Chains} chain(s) of {Options.Replicas}, pipeline {_pipeline}, trim policy keeps {TrimPolicy} checkpoint(s)");
        foreach (var name in _servers.Keys.ToList())
        {
            await StartServerAsync(name);
        }

        // Still on the quiet network: every server agrees on the settings, catches up and serves.
        while (_servers.Values.Any(s => s?.Server is null) && Failure is null)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(1), Scheduler.Time);
        }
    }

    private void StartUnit(string name)
    {
        // A unit that died for good (replaced, docs/simulation.md) has no disk to start from.
        if ((_live.TryGetValue(name, out var running) && running is not null) || !_disks.TryGetValue(name, out var image))
        {
            return;
        }

        var durable = image.Durable;
        var disk = new SimDisk(image, Scheduler);
        var unit = LogUnit.OpenOn(disk, Options.BlockSize);
        _live[name] = (new CheckedUnit(this, name, unit), disk);
        var report = unit.Recovery;

        // Recovery may cut only what no fsync covered: a durable slot, even a damaged one, may
        // have been acknowledged (docs/log.md, "the durable mark").
        if (image.Slots.Count < durable)
        {
            Violation($"{name}'s recovery cut durable slots: {durable} were durable, {image.Slots.Count} are left ({report})");
        }

        Trace.Add($"{name} up: {report}");
        Stats.TornSlotsCut += report.TornSlotsCut;
        Stats.CorruptSlots += report.CorruptLocations.Count;
        Invariants.DisksChanged();
    }

    private void CrashUnit(string name, bool midWrite = false)
    {
        if (_live[name] is not { } live)
        {
            return;
        }

        live.Disk.Kill();
        _live[name] = null;
        _disks[name].Crash(Scheduler.Random, tear: midWrite);
        Stats.UnitCrashes++;
        Trace.Add($"{name} crashed ({_disks[name].Slots.Count} slot(s) on disk, {_disks[name].Durable} durable)");
        Invariants.DisksChanged();
    }

    private async Task StartServerAsync(string name)
    {
        var client = await LogClient.ConnectAsync(_store, Network.ConnectorFor(name), ClientOptions());
        var server = new ServerNode(this, name, client);
        _servers[name] = server;
        Trace.Add($"{name} up");
        _ = server.StartAsync();
    }

    private void CrashServer(string name)
    {
        if (_servers[name] is not { } server)
        {
            return;
        }

        server.Crash();
        _servers[name] = null;
        Stats.ServerCrashes++;
        Trace.Add($"{name} crashed at ordinal #{server.Melded}");
    }

    /// <summary>Why each server last failed (for the no-progress message).</summary>
    public Dictionary<string, string> LastFailures { get; } = new(StringComparer.Ordinal);

    /// <summary>A server whose reader gave up (or that could not start): restart it, as a supervisor would.</summary>
    public void ServerFailed(ServerNode server, string why)
    {
        if (_servers[server.Name] == server)
        {
            LastFailures[server.Name] = why;
            CrashServer(server.Name);
            Scheduler.After(TimeSpan.FromMilliseconds(50), () => _ = RestartServerAsync(server.Name));
        }
    }

    private async Task RestartServerAsync(string name)
    {
        if (_servers[name] is null)
        {
            await StartServerAsync(name);
        }
    }

    public ServerNode? Server(string name) => _servers[name];

    /// <summary>The run is over: every server still up is released as a process's end would.</summary>
    public void PowerOff()
    {
        foreach (var server in _servers.Values)
        {
            server?.Release();
        }
    }

    public IEnumerable<string> ServerNames => _servers.Keys;

    /// <summary>
    /// Moves the log to a new epoch (what a restarted sequencer's host does), retrying until it
    /// succeeds. A random one is dropped while another reconfiguration runs;
    /// one that must happen (<paramref name="wait"/>: a restarted sequencer is not ready until a
    /// new epoch, and the running reconfiguration may have reset the incarnation that crashed)
    /// waits for it and runs after it (seed 42792 with --split-phases --stripes --replace-units).
    /// </summary>
    private async Task NewEpochAsync(string why, bool wait = false)
    {
        if (_reconfiguring && !wait)
        {
            return;
        }

        while (_reconfiguring)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), Scheduler.Time);
        }

        _reconfiguring = true;
        try
        {
            var admin = new LogAdmin(_store, Network.ConnectorFor(AdminName), timeProvider: Scheduler.Time);
            for (var attempt = 0; ; attempt++)
            {
                try
                {
                    var p = await admin.NewEpochAsync();
                    Stats.Epochs++;
                    Trace.Add($"admin: epoch {p.Epoch} ({why})");
                    return;
                }
                catch (SharedLogException e)
                {
                    Trace.Add($"admin: new epoch failed ({e.Message}); retrying");
                    await Task.Delay(TimeSpan.FromMilliseconds(50), Scheduler.Time);
                }
            }
        }
        finally
        {
            _reconfiguring = false;
        }
    }

    /// <summary>A log unit as the network reaches it, with the seal rule checked on every write and fill.</summary>
    private sealed class CheckedUnit(SimCluster cluster, string name, LogUnit unit) : ILogUnit
    {
        public async ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
        {
            var sealedAt = unit.Epoch;
            var reply = await unit.WriteAsync(epoch, address, block, cancellationToken);
            if (reply.Status == LogStatus.Ok)
            {
                cluster.Invariants.SealRule(name, $"write @{address}", epoch, sealedAt);
            }

            return reply;
        }

        public async ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default)
        {
            var sealedAt = unit.Epoch;
            var reply = await unit.FillAsync(epoch, address, cancellationToken);
            if (reply.Status == LogStatus.Ok)
            {
                cluster.Invariants.SealRule(name, $"fill @{address}", epoch, sealedAt);
            }

            return reply;
        }

        public ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
            unit.ReadAsync(epoch, address, destination, cancellationToken);

        public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
            unit.TrimAsync(epoch, address, cancellationToken);

        public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default) =>
            unit.PrefixTrimAsync(epoch, before, cancellationToken);

        public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default) =>
            unit.SealAsync(epoch, cancellationToken);

        public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default) =>
            unit.HighestAsync(epoch, cancellationToken);
    }
}

/// <summary>Counts of one run.</summary>
public sealed partial class SimStats
{
    public int Committed { get; set; }

    public int Failed { get; set; }

    /// <summary>The failed attempts by cause (a down server, a refusal with its error code, a meld abort with its cause).</summary>
    public SortedDictionary<string, int> FailCauses { get; } = new(StringComparer.Ordinal);

    /// <summary>Counts one failed attempt of <paramref name="cause"/>.</summary>
    public void Fail(string cause)
    {
        Failed++;
        FailCauses[cause] = FailCauses.GetValueOrDefault(cause) + 1;
    }

    public int Indeterminate { get; set; }

    public int UnitCrashes { get; set; }

    public int ServerCrashes { get; set; }

    public int SequencerCrashes { get; set; }

    public int Epochs { get; set; }

    public int Partitions { get; set; }

    public int BitFlips { get; set; }

    public int FullDisks { get; set; }

    public long TornSlotsCut { get; set; }

    public long CorruptSlots { get; set; }

    public long Ordinals { get; set; }

    /// <summary>Value arrays the recycling servers' pools took back and reused, summed over the servers serving at the end (docs/value-storage.md).</summary>
    public long ValuesReused { get; set; }

    /// <summary>Checkpoints the servers wrote (their final blocks acknowledged).</summary>
    public int CheckpointsWritten { get; set; }

    /// <summary>Prefix trims of the log that completed (by policy or by the administrator).</summary>
    public int Trims { get; set; }

    /// <summary>Servers that served after starting from a checkpoint (not replaying the log).</summary>
    public int CheckpointRestarts { get; set; }

    /// <summary>Servers stopped because they had to read a trimmed position (restarted from a checkpoint).</summary>
    public int BehindTrim { get; set; }

    /// <summary>Servers that crashed between their first checkpoint part and its final block.</summary>
    public int CrashesDuringCheckpointWrite { get; set; }

    /// <summary>Servers that crashed while a prefix trim of theirs was on its way to the units.</summary>
    public int CrashesDuringTrim { get; set; }

    /// <summary>Virtual time with clients and faults on (the duration, or less with a commit target).</summary>
    public TimeSpan FaultyTime { get; set; }

    /// <summary>Where the faulty time went (sampled every injector step).</summary>
    public SimAvailability Availability { get; } = new();

    /// <summary>Server incarnations that served, and the virtual time from their start to serving, summed.</summary>
    public int Startups { get; set; }

    /// <inheritdoc cref="Startups"/>
    public TimeSpan StartupTime { get; set; }

    /// <summary>Of <see cref="StartupTime"/>: the time to load the checkpoint (settings agreement, finding it, reading it), summed.</summary>
    public TimeSpan CheckpointLoadTime { get; set; }

    /// <summary>Server incarnations that crashed (or failed) before they served.</summary>
    public int StartupsAbandoned { get; set; }

    /// <summary>Committed transactions' latency (begin to outcome), summed.</summary>
    public TimeSpan CommitLatency { get; set; }

    /// <summary>What intention broadcast carried (with <see cref="SimOptions.Broadcast"/>).</summary>
    public BroadcastStats Broadcast { get; } = new();

    /// <summary>Adds <paramref name="other"/>'s counts to these.</summary>
    public void Add(SimStats other)
    {
        Broadcast.Add(other.Broadcast);
        Availability.Add(other.Availability);
        FaultyTime += other.FaultyTime;
        Startups += other.Startups;
        StartupTime += other.StartupTime;
        CheckpointLoadTime += other.CheckpointLoadTime;
        StartupsAbandoned += other.StartupsAbandoned;
        CommitLatency += other.CommitLatency;
        Committed += other.Committed;
        Failed += other.Failed;
        foreach (var (cause, count) in other.FailCauses)
        {
            FailCauses[cause] = FailCauses.GetValueOrDefault(cause) + count;
        }
        Indeterminate += other.Indeterminate;
        UnitCrashes += other.UnitCrashes;
        ServerCrashes += other.ServerCrashes;
        SequencerCrashes += other.SequencerCrashes;
        Epochs += other.Epochs;
        Partitions += other.Partitions;
        BitFlips += other.BitFlips;
        FullDisks += other.FullDisks;
        TornSlotsCut += other.TornSlotsCut;
        CorruptSlots += other.CorruptSlots;
        Ordinals += other.Ordinals;
        ValuesReused += other.ValuesReused;
        CheckpointsWritten += other.CheckpointsWritten;
        Trims += other.Trims;
        CheckpointRestarts += other.CheckpointRestarts;
        BehindTrim += other.BehindTrim;
        CrashesDuringCheckpointWrite += other.CrashesDuringCheckpointWrite;
        CrashesDuringTrim += other.CrashesDuringTrim;
        AddFeatures(other);
    }

    /// <inheritdoc />
    public override string ToString() =>
        $"txns ok {Committed} / fail {Failed} / info {Indeterminate}, ordinals {Ordinals}, values reused {ValuesReused}; crashes: units {UnitCrashes}, servers {ServerCrashes}, sequencer {SequencerCrashes}; epochs {Epochs}, partitions {Partitions}, bit flips {BitFlips}, full disks {FullDisks}, torn slots cut {TornSlotsCut}, corrupt slots found {CorruptSlots}; checkpoints {CheckpointsWritten}, trims {Trims}, restarts from a checkpoint {CheckpointRestarts}, behind the trim {BehindTrim}; crashes during a checkpoint write {CrashesDuringCheckpointWrite}, during a trim {CrashesDuringTrim}{FeaturesText}";
}

/// <summary>
/// Samples of the cluster's state, one per fault-injector step while faults are on: how much of
/// the faulty time the servers served, and how much of it the log was impaired.
/// </summary>
public sealed class SimAvailability
{
    /// <summary>Injector steps sampled.</summary>
    public long Samples { get; set; }

    /// <summary>Server-samples with the server's process down (crashed, not restarted yet).</summary>
    public long ServerDown { get; set; }

    /// <summary>Server-samples with the server starting (loading a checkpoint, catching up).</summary>
    public long ServerStarting { get; set; }

    /// <summary>Server-samples with the server serving.</summary>
    public long ServerServing { get; set; }

    /// <summary>Samples with at least one log unit down.</summary>
    public long UnitDown { get; set; }

    /// <summary>Samples with at least one unit's disk full.</summary>
    public long DiskFull { get; set; }

    /// <summary>Samples with the sequencer down.</summary>
    public long SequencerDown { get; set; }

    /// <summary>Samples with a new epoch under way.</summary>
    public long Reconfiguring { get; set; }

    /// <summary>Samples with at least one partition.</summary>
    public long Partitioned { get; set; }

    /// <summary>Samples with a unit down, a disk full, the sequencer down or a new epoch under way: appends to some chain wait.</summary>
    public long LogImpaired { get; set; }

    /// <summary>Adds <paramref name="other"/>'s counts to these.</summary>
    public void Add(SimAvailability other)
    {
        Samples += other.Samples;
        ServerDown += other.ServerDown;
        ServerStarting += other.ServerStarting;
        ServerServing += other.ServerServing;
        UnitDown += other.UnitDown;
        DiskFull += other.DiskFull;
        SequencerDown += other.SequencerDown;
        Reconfiguring += other.Reconfiguring;
        Partitioned += other.Partitioned;
        LogImpaired += other.LogImpaired;
    }

    private static string Share(long n, long of) => $"{100.0 * n / Math.Max(1, of):F0} %";

    /// <inheritdoc />
    public override string ToString()
    {
        var servers = ServerDown + ServerStarting + ServerServing;
        return $"servers serving {Share(ServerServing, servers)}, starting {Share(ServerStarting, servers)}, down {Share(ServerDown, servers)} of their time; "
            + $"log impaired {Share(LogImpaired, Samples)} of the time (a unit down {Share(UnitDown, Samples)}, a disk full {Share(DiskFull, Samples)}, "
            + $"sequencer down {Share(SequencerDown, Samples)}, new epoch under way {Share(Reconfiguring, Samples)}); a partition {Share(Partitioned, Samples)}";
    }
}
