using System.Buffers.Binary;
using Hyder.Log.Storage;
using Hyder.Simulation.Runtime;

namespace Hyder.Simulation.Faults;

/// <summary>
/// What survives of a unit's disk across crashes: slots in write order, how many are durable,
/// and the metadata. Faults act on it: lost unsynced writes and torn writes at a crash, bit flips
/// in durable slots, a full disk, slow fsyncs.
/// </summary>
public sealed class DiskImage(string name, int blockSize)
{
    internal List<byte[]> Slots { get; } = [];

    internal UnitMetadata Metadata { get; set; }

    /// <summary>How far the fsyncs reached, as <c>durable.mark</c> records it; it survives crashes.</summary>
    internal DurableMark Mark { get; set; } = DurableMark.None;

    /// <summary>The unit's name.</summary>
    public string Name { get; } = name;

    /// <summary>Block size of the unit.</summary>
    public int BlockSize { get; } = blockSize;

    /// <summary>Slots that an fsync covered.</summary>
    public int Durable { get; internal set; }

    /// <summary>Appends fail with "no space left" while set.</summary>
    public bool Full { get; set; }

    /// <summary>Extra fsync latency while set (a slow disk).</summary>
    public TimeSpan SlowSync { get; set; }

    /// <summary>Planted bug for the mutation test: acknowledge writes before they are durable.</summary>
    public bool AckBeforeSync { get; set; }

    /// <summary>Planted bug for the mutation test: recovery ignores the durable mark.</summary>
    public bool IgnoreMark { get; set; }

    /// <summary>Bits flipped so far.</summary>
    public int Flips { get; private set; }

    /// <summary>Called once, then cleared, right after the next slot is appended (the crash-mid-write fault).</summary>
    public Action? OnNextAppend { get; set; }

    /// <summary>Called with (location, slot bytes) when a slot becomes durable.</summary>
    public Action<DiskImage, int, byte[]>? OnDurable { get; set; }

    /// <summary>
    /// A crash: unsynced slots are lost, except that the disk may have written some of them in
    /// order before the power went, and the one after those may be torn (a prefix written).
    /// </summary>
    /// <param name="random">The run's random source.</param>
    /// <param name="tear">Crash mid-write: the first unsynced slot, if any, is torn for certain.</param>
    public void Crash(Random random, bool tear = false)
    {
        var unsynced = Slots.Count - Durable;
        var kept = unsynced == 0 || tear ? 0 : random.Next(unsynced + 1);
        var keepUntil = Durable + kept;
        if (keepUntil < Slots.Count && (tear || random.Next(3) == 0))
        {
            // Torn: only a prefix of the next slot reached the platter; the rest reads as zeros.
            var torn = Slots[keepUntil];
            torn.AsSpan(random.Next(1, torn.Length)).Clear();
            keepUntil++;
        }

        Slots.RemoveRange(keepUntil, Slots.Count - keepUntil);
    }

    /// <summary>Flips one bit of one of the durable slots at <paramref name="candidates"/>; false if there is none.</summary>
    public bool FlipBit(Random random, IReadOnlyList<int> candidates)
    {
        if (candidates.Count == 0)
        {
            return false;
        }

        var slot = Slots[candidates[random.Next(candidates.Count)]];
        var bit = random.Next(slot.Length * 8);
        slot[bit / 8] ^= (byte)(1 << (bit % 8));
        Flips++;
        return true;
    }
}

/// <summary>
/// One incarnation of a unit's disk as an <see cref="ISlotStore"/> under a real
/// <see cref="Hyder.Log.Units.LogUnit"/>. Fsyncs complete after a virtual delay; a crash
/// abandons the waiters (their writes were never acknowledged). Recovery scans the slots with
/// the production slot checks (<see cref="SlotHeader.Check"/>) and the durable mark
/// (<see cref="DurableMark.Keep"/>), and cuts a torn tail the way <c>FileSlotStore</c> does.
/// </summary>
internal sealed class SimDisk : ISlotStore
{
    private readonly DiskImage _image;
    private readonly SimScheduler _scheduler;
    private readonly List<(long Location, TaskCompletionSource Done)> _waiters = [];
    private bool _syncScheduled;
    private bool _dead;

    public SimDisk(DiskImage image, SimScheduler scheduler)
    {
        _image = image;
        _scheduler = scheduler;
        SlotSize = SlotHeader.Size + image.BlockSize;
    }

    public int SlotSize { get; }

    /// <summary>Stops this incarnation: no fsync completes any more.</summary>
    public void Kill() => _dead = true;

    public StoreRecovery Recover()
    {
        var recovery = new StoreRecovery { Metadata = _image.Metadata, DurableHighest = _image.Mark.Highest };
        var report = recovery.Report;
        report.Segments = 1;
        var lastIntact = -1;
        var bad = new List<(int Location, SlotCheck Check, long Address)>();
        for (var i = 0; i < _image.Slots.Count; i++)
        {
            var check = SlotHeader.Check(_image.Slots[i], _image.BlockSize, out var kind, out var address, out _);
            if (check == SlotCheck.Ok)
            {
                lastIntact = i;
                recovery.Slots.Add(new RecoveredSlot(i, kind, address));
                report.Slots++;
            }
            else
            {
                bad.Add((i, check, address));
            }
        }

        var keep = _image.IgnoreMark ? lastIntact + 1 : (int)_image.Mark.Keep(lastIntact);
        if (keep > _image.Slots.Count)
        {
            throw new InvalidOperationException($"{_image.Name} lost durable slots: its mark says {keep}, its disk holds {_image.Slots.Count}.");
        }

        foreach (var (location, check, address) in bad)
        {
            if (location >= keep)
            {
                continue;
            }

            report.CorruptLocations.Add(location);
            if (check == SlotCheck.HeaderOk)
            {
                report.CorruptAddresses.Add(address);
                recovery.Slots.Add(new RecoveredSlot(location, SlotKind.Corrupt, address));
            }
        }

        recovery.Slots.Sort((a, b) => a.Location.CompareTo(b.Location));
        var cut = _image.Slots.Count - keep;
        report.TornSlotsCut = cut;
        report.TornBytesCut = (long)cut * SlotSize;
        _image.Slots.RemoveRange(keep, cut);
        _image.Durable = _image.Slots.Count;

        // As FileSlotStore does: what recovery kept is flushed and the mark rewritten to cover it.
        var highest = recovery.Slots.Aggregate(_image.Mark.Highest, (h, slot) => Math.Max(h, slot.Address));
        _image.Mark = new DurableMark(_image.Slots.Count, highest);
        return recovery;
    }

    public long Append(ReadOnlySpan<byte> slot, long address)
    {
        if (_image.Full)
        {
            throw new IOException($"No space left on device (simulated, unit {_image.Name})");
        }

        _image.Slots.Add(slot.ToArray());
        if (_image.OnNextAppend is { } hook)
        {
            _image.OnNextAppend = null;
            hook();
        }

        return _image.Slots.Count - 1;
    }

    public ValueTask WaitDurableAsync(long location)
    {
        if (location < _image.Durable)
        {
            return default;
        }

        var done = new TaskCompletionSource();
        _waiters.Add((location, done));
        if (!_syncScheduled)
        {
            _syncScheduled = true;
            var latency = TimeSpan.FromTicks(500 + _scheduler.Random.Next(5_000)) + _image.SlowSync;
            if (_image.AckBeforeSync)
            {
                // Without an fsync the kernel writes dirty pages back later (seconds on Linux).
                latency += TimeSpan.FromMilliseconds(200);
            }

            _scheduler.After(latency, Sync);
        }

        // The planted bug acknowledges now; the fsync still happens later.
        return _image.AckBeforeSync ? default : new ValueTask(done.Task);
    }

    private void Sync()
    {
        _syncScheduled = false;
        if (_dead)
        {
            return;
        }

        var from = _image.Durable;
        _image.Durable = _image.Slots.Count;
        var highest = _image.Mark.Highest;
        for (var i = from; i < _image.Durable; i++)
        {
            highest = Math.Max(highest, BinaryPrimitives.ReadInt64LittleEndian(_image.Slots[i].AsSpan(8)));
            _image.OnDurable?.Invoke(_image, i, _image.Slots[i]);
        }

        // FileSlotStore writes and flushes the mark after the data's fsync, before it answers.
        _image.Mark = new DurableMark(_image.Durable, highest);

        var ready = _waiters.Where(w => w.Location < _image.Durable).ToList();
        _waiters.RemoveAll(w => w.Location < _image.Durable);
        foreach (var (_, done) in ready)
        {
            done.SetResult();
        }
    }

    public bool TryRead(long location, Span<byte> slot)
    {
        if (location >= _image.Slots.Count)
        {
            return false;
        }

        _image.Slots[(int)location].CopyTo(slot);
        return true;
    }

    public void SaveMetadata(UnitMetadata metadata) => _image.Metadata = metadata;

    public void ReleaseBelow(long trimMark)
    {
        // The simulation never trims; space is not modelled.
    }

    public void Dispose() => _dead = true;
}
