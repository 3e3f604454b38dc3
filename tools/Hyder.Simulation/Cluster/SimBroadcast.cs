using System.Buffers;
using Hyder.Server.Broadcast;
using Hyder.Server.Core;

namespace Hyder.Simulation.Cluster;

/// <summary>The kinds of forged-but-well-formed blocks the broadcast path carries (docs/simulation.md, "Intention broadcast").</summary>
public enum ForgeKind
{
    /// <summary>Another position's real block, sent for the position just appended (whose real content differs).</summary>
    WrongContent,

    /// <summary>The block just appended, sent for a later position (a copy under another position and ordinal).</summary>
    Misplaced,

    /// <summary>A real block sent for a position whose token the forger took and never wrote: the log fills it as a hole.</summary>
    Hole,
}

/// <summary>
/// Intention broadcast between the simulated servers, on the scheduler: each server incarnation
/// gets an <see cref="IIntentionBroadcast"/> whose receiving side is the production
/// <see cref="BroadcastHub"/> (never started: no socket, no thread) behind the production
/// <see cref="BroadcastHubAdapter"/>, so the hub's cache (duplicates ignored, first copy kept,
/// floor, eviction) and the server's reader (parts, duplicate copies, verification against the
/// log) are what runs. A publish becomes one delivery per live peer into its hub
/// (<c>BroadcastHub.Deliver</c>, what an inbound connection calls with a frame that passed its
/// checks), after a seeded delay; with faults on, a delivery is lost, cut by a partition,
/// duplicated or slowed (which reorders it), and with <see cref="Faults.FaultProfile.BroadcastForge"/>
/// a peer also gets a forged but well-formed block (<see cref="ForgeKind"/>).
/// </summary>
internal sealed class SimBroadcast(SimCluster cluster)
{
    private const int Remembered = 64;
    private readonly Dictionary<string, Endpoint> _endpoints = new(StringComparer.Ordinal);
    private readonly List<(long Position, byte[] Block)> _recent = [];

    public BroadcastStats Stats => cluster.Stats.Broadcast;

    /// <summary>A new incarnation of <paramref name="server"/>: a fresh hub (an empty cache, as after a restart).</summary>
    public Endpoint Attach(string server)
    {
        var endpoint = new Endpoint(this, server);
        _endpoints[server] = endpoint;
        return endpoint;
    }

    private void Send(Endpoint from, long position, byte[] block)
    {
        if (from.Dead)
        {
            return;
        }

        var r = cluster.Scheduler.Random;
        var f = cluster.Options.Faults;
        var faults = cluster.Network.FaultsOn;
        Stats.Published++;
        var peers = _endpoints.Values.Where(e => e != from && !e.Dead).OrderBy(e => e.Server, StringComparer.Ordinal).ToList();

        // A forgery goes out first and faster than any real delivery, so it is the first copy a
        // peer's cache holds for its position (the cache keeps the first).
        if (faults && peers.Count > 0 && r.NextDouble() < f.BroadcastForge)
        {
            Forge(peers[r.Next(peers.Count)], position, block);
        }

        foreach (var peer in peers)
        {
            if (faults && cluster.Network.IsCut(from.Server, peer.Server))
            {
                Stats.Cut++;
                continue;
            }

            if (faults && r.NextDouble() < f.BroadcastLoss)
            {
                Stats.Lost++;
                continue;
            }

            var copies = faults && r.NextDouble() < f.BroadcastDuplication ? 2 : 1;
            Stats.Duplicated += copies - 1;
            for (var c = 0; c < copies; c++)
            {
                var slow = faults && r.NextDouble() < f.BroadcastSlow;
                Stats.Delayed += slow ? 1 : 0;
                var delay = slow ? TimeSpan.FromMilliseconds(5 + r.Next(45)) : TimeSpan.FromTicks(500 + r.Next(9_500));
                var target = peer;
                cluster.Scheduler.After(delay, () => Deliver(target, position, block, null));
            }
        }

        _recent.Add((position, block));
        if (_recent.Count > Remembered)
        {
            _recent.RemoveAt(0);
        }
    }

    private void Forge(Endpoint victim, long position, byte[] block)
    {
        var r = cluster.Scheduler.Random;
        var kind = (ForgeKind)r.Next(3);
        long at;
        byte[] bytes;
        switch (kind)
        {
            case ForgeKind.WrongContent:
                var others = _recent.Where(b => !b.Block.AsSpan().SequenceEqual(block)).ToList();
                if (others.Count == 0)
                {
                    return;
                }

                (at, bytes) = (position, others[r.Next(others.Count)].Block);
                break;
            case ForgeKind.Misplaced:
                (at, bytes) = (position + 1 + r.Next(3), block);
                break;
            default:
                if (cluster.TokenNobodyWrites() is not { } hole)
                {
                    return;
                }

                (at, bytes) = (hole, block);
                break;
        }

        cluster.Trace.Add($"broadcast: forged {kind} block for @{at} to {victim.Server}");
        cluster.Scheduler.After(TimeSpan.FromTicks(100 + r.Next(300)), () => Deliver(victim, at, bytes, kind));
    }

    private void Deliver(Endpoint to, long position, byte[] block, ForgeKind? forged)
    {
        if (to.Dead)
        {
            return;
        }

        if (forged is { } kind)
        {
            Stats.Forged[(int)kind]++;
            to.Forgeries[position] = (block, kind);
        }
        else
        {
            Stats.Delivered++;
        }

        if (position < to.HighestDelivered)
        {
            Stats.Reordered++;
        }

        to.HighestDelivered = Math.Max(to.HighestDelivered, position);
        to.Hub.Deliver(position, new ReadOnlySequence<byte>(block));
    }

    /// <summary>One server incarnation's broadcast: sends through the simulation, receives into a production hub.</summary>
    internal sealed class Endpoint : IIntentionBroadcast
    {
        private readonly SimBroadcast _owner;
        private readonly BroadcastHubAdapter _adapter;

        public Endpoint(SimBroadcast owner, string server)
        {
            _owner = owner;
            Server = server;
            Hub = new BroadcastHub(new BroadcastOptions { ClusterId = "sim", ServerId = server, CacheCapacity = 256 });
            _adapter = new BroadcastHubAdapter(Hub);
        }

        public string Server { get; }

        public BroadcastHub Hub { get; }

        /// <summary>The process crashed: it neither sends nor receives any more.</summary>
        public bool Dead { get; private set; }

        public long HighestDelivered { get; set; } = -1;

        /// <summary>Forged blocks delivered here, by position (to count the ones the reader took).</summary>
        public Dictionary<long, (byte[] Block, ForgeKind Kind)> Forgeries { get; } = [];

        public void Kill() => Dead = true;

        public void Publish(long position, ReadOnlyMemory<byte> block) => _owner.Send(this, position, block.ToArray());

        public bool TryTake(long position, out byte[] block)
        {
            if (!_adapter.TryTake(position, out block))
            {
                return false;
            }

            var stats = _owner.Stats;
            if (Forgeries.Remove(position, out var forged) && forged.Block.AsSpan().SequenceEqual(block))
            {
                stats.ForgedTaken[(int)forged.Kind]++;
            }
            else
            {
                stats.Taken++;
            }

            return true;
        }

        public void DiscardBelow(long position)
        {
            _adapter.DiscardBelow(position);
            if (Forgeries.Count > 0)
            {
                foreach (var p in Forgeries.Keys.Where(p => p < position).ToList())
                {
                    Forgeries.Remove(p);
                }
            }
        }

        public void OnReceived(Action received) => _adapter.OnReceived(received);
    }
}

/// <summary>What the simulated broadcast carried in a run.</summary>
public sealed class BroadcastStats
{
    /// <summary>Blocks the servers published (after the log acknowledged them).</summary>
    public long Published { get; set; }

    /// <summary>Real copies delivered into a live peer's hub (duplicates included).</summary>
    public long Delivered { get; set; }

    /// <summary>Copies lost.</summary>
    public long Lost { get; set; }

    /// <summary>Copies not sent because a partition cut the two servers apart.</summary>
    public long Cut { get; set; }

    /// <summary>Extra copies sent.</summary>
    public long Duplicated { get; set; }

    /// <summary>Copies slowed to 5-50 ms.</summary>
    public long Delayed { get; set; }

    /// <summary>Deliveries of a position below one already delivered to that peer.</summary>
    public long Reordered { get; set; }

    /// <summary>Real blocks the servers' readers took from their hubs.</summary>
    public long Taken { get; set; }

    /// <summary>Forged blocks delivered, by <see cref="ForgeKind"/>.</summary>
    public long[] Forged { get; } = new long[3];

    /// <summary>Forged blocks a reader took from its hub (and, unless it trusts broadcast, checked against the log), by <see cref="ForgeKind"/>.</summary>
    public long[] ForgedTaken { get; } = new long[3];

    /// <summary>Adds <paramref name="other"/>'s counts to these.</summary>
    public void Add(BroadcastStats other)
    {
        Published += other.Published;
        Delivered += other.Delivered;
        Lost += other.Lost;
        Cut += other.Cut;
        Duplicated += other.Duplicated;
        Delayed += other.Delayed;
        Reordered += other.Reordered;
        Taken += other.Taken;
        for (var k = 0; k < Forged.Length; k++)
        {
            Forged[k] += other.Forged[k];
            ForgedTaken[k] += other.ForgedTaken[k];
        }
    }

    /// <inheritdoc />
    public override string ToString() =>
        $"broadcast: published {Published}, delivered {Delivered}, taken by readers {Taken}; lost {Lost}, cut {Cut}, duplicated {Duplicated}, delayed {Delayed}, reordered {Reordered}; "
        + $"forged (delivered / taken) wrong content {Forged[0]} / {ForgedTaken[0]}, misplaced {Forged[1]} / {ForgedTaken[1]}, hole {Forged[2]} / {ForgedTaken[2]}";
}
