using Hyder.Log.Storage;

namespace Hyder.Simulation.Cluster;

/// <summary>
/// The cluster's safety rules, checked as the run goes: servers that melded the same ordinal
/// made the same decision and reached the same state hash; no address was acknowledged with two
/// different blocks, and every acknowledged block stays on a replica of its chain with the same
/// bytes (checked whenever a crash or a recovery changed a disk); every durable data-or-fill slot
/// of an address holds the same thing on every replica and in every incarnation (write-once);
/// no unit accepts a write or fill of an epoch older than its seal. Acknowledged blocks below the
/// highest trim mark issued are excused: the trim rule, not the log, answers for them.
/// </summary>
internal sealed class Invariants(SimCluster cluster)
{
    private readonly Dictionary<long, (bool Committed, ulong Hash, string Server)> _melds = [];
    private readonly Dictionary<long, byte[]> _acked = [];
    private readonly Dictionary<long, (SlotKind Kind, uint Crc, string Unit)> _written = [];
    private bool _disksChanged;
    private long _trimmedBelow;

    /// <summary>The highest prefix-trim mark any server issued: acknowledged blocks below it may be gone.</summary>
    public long TrimmedBelow => _trimmedBelow;

    /// <summary>A server asked the log to trim below <paramref name="before"/>.</summary>
    public void TrimIssued(long before) => _trimmedBelow = Math.Max(_trimmedBelow, before);

    /// <summary>Acknowledged appends, by address.</summary>
    public IReadOnlyDictionary<long, byte[]> Acked => _acked;

    /// <summary>The decisions and hashes of every ordinal melded.</summary>
    public IReadOnlyDictionary<long, (bool Committed, ulong Hash, string Server)> Melds => _melds;

    public void Melded(string server, long ordinal, bool committed, ulong hash)
    {
        if (_melds.TryGetValue(ordinal, out var first))
        {
            if (first.Committed != committed || first.Hash != hash)
            {
                cluster.Violation($"servers diverged at ordinal #{ordinal}: {first.Server} {(first.Committed ? "committed" : "aborted")} with state {first.Hash:x16}, {server} {(committed ? "committed" : "aborted")} with state {hash:x16}");
            }

            return;
        }

        _melds[ordinal] = (committed, hash, server);
    }

    public void Acknowledged(string server, long address, byte[] block)
    {
        if (_acked.TryGetValue(address, out var earlier) && !earlier.AsSpan().SequenceEqual(block))
        {
            cluster.Violation($"{server}: address @{address} acknowledged for two different blocks");
            return;
        }

        _acked[address] = block;
    }

    public void Durable(string unit, byte[] slot, int blockSize)
    {
        if (SlotHeader.Check(slot, blockSize, out var kind, out var address, out _) != SlotCheck.Ok || kind == SlotKind.Trim)
        {
            return;
        }

        var crc = BitConverter.ToUInt32(slot, 28);
        if (_written.TryGetValue(address, out var first))
        {
            if ((first.Kind != kind || first.Crc != crc) && !cluster.ChainOf(address).Contains(first.Unit))
            {
                // A block a new stripe left behind on the address's old chain (half-written, never
                // acknowledged, never read there again): the address's chain is another one now.
                _written[address] = (kind, crc, unit);
                return;
            }

            if ((first.Kind != kind || first.Crc != crc) && cluster.ChainOf(address).Contains(unit))
            {
                cluster.Violation($"write-once broken at @{address}: {first.Unit} durably holds {first.Kind} (body crc {first.Crc:x8}), {unit} {kind} (body crc {crc:x8})");
            }

            return;
        }

        _written[address] = (kind, crc, unit);
    }

    public void SealRule(string unit, string op, long requestEpoch, long sealedEpoch)
    {
        if (requestEpoch < sealedEpoch)
        {
            cluster.Violation($"{unit} accepted {op} of epoch {requestEpoch} after it was sealed at {sealedEpoch}");
        }
    }

    public void DisksChanged() => _disksChanged = true;

    /// <summary>Runs after every step; the acknowledged-block scan only when a disk lost something.</summary>
    public void AfterStep()
    {
        if (!_disksChanged)
        {
            return;
        }

        _disksChanged = false;
        var held = cluster.DurableBlocks();
        foreach (var (address, block) in _acked)
        {
            if (address < _trimmedBelow)
            {
                continue;
            }

            var chain = cluster.ChainOf(address);
            if (!chain.Any(u => held.TryGetValue((u, address), out var stored) && stored.AsSpan().SequenceEqual(block)))
            {
                cluster.Violation($"acknowledged block @{address} ({block.Length} B) is on no replica of its chain [{string.Join(", ", chain)}] any more");
                return;
            }
        }
    }
}
