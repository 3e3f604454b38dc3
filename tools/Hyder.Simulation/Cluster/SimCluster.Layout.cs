using Hyder.Log;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Storage;
using Hyder.Simulation.Faults;

namespace Hyder.Simulation.Cluster;

/// <summary>
/// Changes of the log's layout while the load runs, through the production <see cref="LogAdmin"/>:
/// stripes (<see cref="SimOptions.Stripes"/>: a new chain of new units, <c>AddStripeAsync</c>)
/// and unit replacement (<see cref="SimOptions.ReplaceUnits"/>: a unit dies for good, disk and
/// all, and a new empty unit takes its place, <c>ReplaceUnitAsync</c>: seal, copy the chain from
/// the survivor, install the next projection). The invariants follow the latest projection
/// (<see cref="ChainOf"/>); every position read before a replacement must read the same after it.
/// </summary>
internal sealed partial class SimCluster
{
    /// <summary>Per injector step: the administrator adds a stripe (at most <see cref="MaxStripesAdded"/> per run).</summary>
    private const double AddStripeRate = 0.04;

    private const int MaxStripesAdded = 2;

    /// <summary>Per injector step: a unit dies for good and is replaced (one at a time, at most <see cref="MaxReplacements"/> per run).</summary>
    private const double ReplaceRate = 0.04;

    private const int MaxReplacements = 2;

    private readonly List<Task> _layoutChanges = [];
    private readonly HashSet<string> _stripeUnits = new(StringComparer.Ordinal);
    private readonly Dictionary<long, (LogEntryKind Kind, byte[] Bytes)> _deferredChecks = [];
    private int _chainsMade;
    private int _unitsMade;
    private bool _replacing;

    /// <summary>Draws the layout faults the run asks for (no random draw otherwise, so other runs keep their traces).</summary>
    private void InjectLayoutFaults()
    {
        var r = Scheduler.Random;
        if (Options.Stripes && Stats.StripesAdded + _layoutChanges.Count(t => !t.IsCompleted) < MaxStripesAdded && r.NextDouble() < AddStripeRate)
        {
            _layoutChanges.Add(AddStripeAsync());
        }

        if (Options.ReplaceUnits && Options.Replicas > 1 && !_replacing && _unitsMade < MaxReplacements && r.NextDouble() < ReplaceRate)
        {
            var candidates = (_store.Latest?.AllUnits() ?? []).Where(CanDie).ToList();
            if (candidates.Count > 0)
            {
                _layoutChanges.Add(ReplaceAsync(Pick(candidates)));
            }
        }
    }

    /// <summary>
    /// A unit may die for good only when every other replica of its chains holds an intact copy of
    /// everything durable: the log tolerates one lost copy, not a lost copy plus a flipped bit on
    /// the survivor (the same rule as the bit flips', docs/simulation.md).
    /// </summary>
    private bool CanDie(string unit) =>
        _store.Latest!.Ranges.SelectMany(r => r.Chains).Where(c => c.Contains(unit)).SelectMany(c => c).Where(u => u != unit)
            .All(u => _disks.TryGetValue(u, out var disk) && Enumerable.Range(0, Math.Min(disk.Durable, disk.Slots.Count))
                .All(i => SlotHeader.Check(disk.Slots[i], disk.BlockSize, out _, out _, out _) == SlotCheck.Ok));

    /// <summary>A new unit with an empty disk, on the network and up.</summary>
    private void MakeUnit(string name)
    {
        var disk = new DiskImage(name, Options.BlockSize) { AckBeforeSync = Options.PlantAckBeforeSync, IgnoreMark = Options.PlantIgnoreDurableMark };
        disk.OnDurable = (image, _, slot) => Invariants.Durable(image.Name, slot, image.BlockSize);
        _disks[name] = disk;
        Network.Register(name, () => _live.GetValueOrDefault(name)?.Unit);
        StartUnit(name);
    }

    /// <summary>Adds a chain of new units; the log stripes over it from the tail on.</summary>
    private async Task AddStripeAsync()
    {
        var c = Options.Chains + _chainsMade++;
        var chain = Enumerable.Range(0, Options.Replicas).Select(r => $"u{c}{r}").ToList();
        foreach (var name in chain)
        {
            MakeUnit(name);
            _units.Add(name);
            _stripeUnits.Add(name);
        }

        await AdministerAsync($"add stripe [{string.Join(", ", chain)}]", admin => admin.AddStripeAsync(chain), p => p.AllUnits().Contains(chain[0]));
        Stats.StripesAdded++;
        Stats.FinalChains = _store.Latest!.Ranges[^1].Chains.Count;
    }

    /// <summary>
    /// Kills <paramref name="victim"/> for good (its disk is gone), starts an empty unit, and has the
    /// administrator replace the one by the other; then every position read before reads the same.
    /// </summary>
    private async Task ReplaceAsync(string victim)
    {
        _replacing = true;
        try
        {
            var replacement = $"n{_unitsMade}";
            var before = await ReadLogAsync(null);
            if (!CanDie(victim))
            {
                // A bit flipped on a partner while the log was read: the unit lives on.
                Trace.Add($"{victim} spared: a partner holds a corrupt slot");
                return;
            }

            if (_live[victim] is { } live)
            {
                live.Disk.Kill();
            }

            _unitsMade++;
            _live[victim] = null;
            _disks.Remove(victim);
            _units[_units.IndexOf(victim)] = replacement;
            Trace.Add($"{victim} died for good ({before.Count} position(s) read before); {replacement} starts empty");
            Invariants.DisksChanged();
            MakeUnit(replacement);

            // The operator notices after a while.
            await Task.Delay(FaultLength(), Scheduler.Time);
            await AdministerAsync($"replace {victim} by {replacement}", admin => admin.ReplaceUnitAsync(victim, replacement), p => !p.AllUnits().Contains(victim));
            Stats.UnitsReplaced++;
            var after = await ReadLogAsync(before.Keys);
            foreach (var (address, was) in before)
            {
                if (!after.TryGetValue(address, out var now))
                {
                    // Unreadable while faults go on: checked again once they stop.
                    _deferredChecks[address] = was;
                    continue;
                }

                Compare(address, was, now, victim);
            }

            Stats.PositionsCheckedAcrossReplacements += after.Count;
        }
        finally
        {
            _replacing = false;
        }
    }

    private void Compare(long address, (LogEntryKind Kind, byte[] Bytes) was, (LogEntryKind Kind, byte[] Bytes) now, string victim)
    {
        if (now.Kind == LogEntryKind.Unwritten && address < Invariants.TrimmedBelow)
        {
            return;
        }

        if (was.Kind != now.Kind || !was.Bytes.AsSpan().SequenceEqual(now.Bytes))
        {
            Violation($"@{address} read {was.Kind} ({was.Bytes.Length} B) before {victim} was replaced and {now.Kind} ({now.Bytes.Length} B){(was.Kind == now.Kind ? " with other bytes" : "")} after");
        }
    }

    /// <summary>
    /// Reads positions through a fresh client: <paramref name="addresses"/>, or every position from
    /// the highest trim mark to the last acknowledged block. Keeps what reads as data or a fill;
    /// a position that is trimmed (trimmed) or does not answer in time is left out.
    /// </summary>
    private async Task<Dictionary<long, (LogEntryKind Kind, byte[] Bytes)>> ReadLogAsync(IEnumerable<long>? addresses)
    {
        var reader = await LogClient.ConnectAsync(_store, Network.ConnectorFor(AdminName), ClientOptions());
        var last = Invariants.Acked.Count == 0 ? -1 : Invariants.Acked.Keys.Max();
        var from = Invariants.TrimmedBelow;
        var read = new Dictionary<long, (LogEntryKind, byte[])>();
        var buffer = new byte[Options.BlockSize];
        foreach (var address in (addresses ?? LongRange(from, last)).ToList())
        {
            try
            {
                var r = await reader.ReadAsync(address, buffer);
                if (r.Kind != LogEntryKind.Unwritten || addresses is not null)
                {
                    read[address] = (r.Kind, buffer.AsSpan(0, r.Kind == LogEntryKind.Data ? r.Length : 0).ToArray());
                }
            }
            catch (Exception e) when (e is SharedLogException)
            {
                // Trimmed since, or the log did not answer for the operation timeout.
                if (addresses is not null && address < Invariants.TrimmedBelow)
                {
                    read[address] = (LogEntryKind.Unwritten, []);
                }
            }
        }

        return read;
    }

    private static IEnumerable<long> LongRange(long from, long to)
    {
        for (var a = from; a <= to; a++)
        {
            yield return a;
        }
    }

    /// <summary>
    /// One reconfiguration, retried until it is in: under the cluster's reconfiguration flag (one
    /// administrator at a time); an attempt whose projection went in but whose sequencer reset
    /// failed is finished by a new epoch.
    /// </summary>
    private async Task AdministerAsync(string what, Func<LogAdmin, Task<Hyder.Log.Layout.Projection>> change, Func<Hyder.Log.Layout.Projection, bool> done)
    {
        while (_reconfiguring)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), Scheduler.Time);
        }

        _reconfiguring = true;
        try
        {
            var admin = new LogAdmin(_store, Network.ConnectorFor(AdminName), timeProvider: Scheduler.Time);
            while (true)
            {
                var installed = _store.Latest is { } latest && done(latest);
                try
                {
                    var p = installed ? await admin.NewEpochAsync() : await change(admin);
                    Stats.Epochs++;
                    Trace.Add($"admin: epoch {p.Epoch} ({(installed ? "new epoch after " : "")}{what})");
                    return;
                }
                catch (SharedLogException e)
                {
                    Trace.Add($"admin: {what} failed ({e.Message}); retrying");
                    await Task.Delay(TimeSpan.FromMilliseconds(50), Scheduler.Time);
                }
            }
        }
        finally
        {
            _reconfiguring = false;
        }
    }

    /// <summary>
    /// After the faults stop: waits for layout changes under way, then compares the positions a
    /// replacement could not read back while faults went on.
    /// </summary>
    private async Task LayoutSettledAsync(long deadline)
    {
        while (_layoutChanges.Any(t => !t.IsCompleted) && Scheduler.Now < deadline)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(10), Scheduler.Time);
        }

        foreach (var t in _layoutChanges.Where(t => t.IsFaulted))
        {
            Violation($"a layout change failed: {t.Exception!.InnerException}");
        }

        if (_deferredChecks.Count == 0 || Failure is not null)
        {
            return;
        }

        var after = await ReadLogAsync(_deferredChecks.Keys);
        foreach (var (address, was) in _deferredChecks)
        {
            if (!after.TryGetValue(address, out var now))
            {
                Violation($"@{address} ({was.Kind} before a replacement) does not read back after the faults stopped");
                return;
            }

            Compare(address, was, now, "a unit");
        }

        Stats.PositionsCheckedAcrossReplacements += after.Count;
    }
}
