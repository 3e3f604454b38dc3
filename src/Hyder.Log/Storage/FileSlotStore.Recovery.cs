
namespace Hyder.Log.Storage;

internal sealed partial class FileSlotStore
{
    private const int ScanSlots = 32;

    /// <summary>
    /// Reads every segment in order. A bad slot that was durable (below the durable mark, or
    /// before an intact slot) is corruption: it is reported and, if its header is intact, its
    /// address answers <see cref="LogStatus.Corrupt"/>; it is never returned as data. In the last
    /// segment, the bad slots after both the last intact one and the mark (and any partial slot)
    /// are a torn tail: never durable, so never acknowledged; they are cut. Then the kept slots
    /// are flushed and the mark records them.
    /// </summary>
    public StoreRecovery Recover()
    {
        var recovery = new StoreRecovery { Metadata = UnitMetadata.Load(_directory) };
        var report = recovery.Report;
        var loaded = DurableMark.Load(_directory);
        report.DurableMarkDamaged = loaded is null;
        var mark = loaded ?? DurableMark.None;
        recovery.DurableHighest = mark.Highest;
        var files = new List<(long Index, string Path)>();
        foreach (var path in Directory.EnumerateFiles(_directory, "segment-*.log"))
        {
            if (SegmentFile.TryParseName(Path.GetFileName(path), out var index))
            {
                files.Add((index, path));
            }
        }

        files.Sort((a, b) => a.Index.CompareTo(b.Index));
        var buffer = BufferPool.Arrays.Rent(ScanSlots * SlotSize);
        try
        {
            for (var i = 0; i < files.Count; i++)
            {
                var segment = SegmentFile.Open(files[i].Path, files[i].Index);
                var isLast = i == files.Count - 1;
                report.Segments++;
                if (!segment.HeaderMatches(_blockSize, _slotsPerSegment, out var problem))
                {
                    if (!isLast || RandomAccess.GetLength(segment.Handle) >= OffsetOf(1))
                    {
                        throw new LogCorruptionException($"Segment '{segment.Path}': {problem}; its slots cannot be located.");
                    }

                    // A segment whose creation was torn holds nothing: start it again.
                    report.TornBytesCut += RandomAccess.GetLength(segment.Handle);
                    segment.ResetHeader(_blockSize, _slotsPerSegment);
                }
                else
                {
                    ScanSegment(segment, isLast, mark, buffer, recovery);
                }

                _segments.Add(segment.Index, segment);
                _active = segment;
            }
        }
        finally
        {
            BufferPool.Arrays.Return(buffer);
        }

        _next = _active is null ? 0 : (_active.Index * _slotsPerSegment) + _active.Count;
        if (_next < mark.Slots)
        {
            throw new LogCorruptionException(
                $"The data directory '{_directory}' holds {_next} slot(s), but {mark.Slots} were made durable ({DurableMark.FileName}): segment files are missing.");
        }

        _highestAppended = recovery.Slots.Aggregate(mark.Highest, (highest, slot) => Math.Max(highest, slot.Address));
        if (_commit is not null)
        {
            // What recovery read may still be only in the page cache (the process died, not the
            // machine): make it durable before the mark claims it and appends are answered.
            if (_active is not null)
            {
                RandomAccess.FlushToDisk(_active.Handle);
            }

            _written = new DurableMark(_next, _highestAppended);
            _markHandle = DurableMark.OpenForWriting(_directory, _written);
        }

        _commit?.Recovered(_next);
        return recovery;
    }

    private void ScanSegment(SegmentFile segment, bool isLast, DurableMark mark, byte[] buffer, StoreRecovery recovery)
    {
        var report = recovery.Report;
        var length = RandomAccess.GetLength(segment.Handle);
        var whole = (int)Math.Min((length - SegmentFile.HeaderSize) / SlotSize, _slotsPerSegment);
        var baseLocation = segment.Index * _slotsPerSegment;
        var lastIntact = -1;
        var bad = new List<(int Slot, SlotCheck Check, long Address)>();
        for (var first = 0; first < whole; first += ScanSlots)
        {
            var count = Math.Min(ScanSlots, whole - first);
            var span = buffer.AsSpan(0, count * SlotSize);
            RandomAccess.Read(segment.Handle, span, OffsetOf(first));
            for (var s = 0; s < count; s++)
            {
                var slot = span.Slice(s * SlotSize, SlotSize);
                var check = SlotHeader.Check(slot, _blockSize, out var kind, out var address, out _);
                if (check == SlotCheck.Ok)
                {
                    lastIntact = first + s;
                    recovery.Slots.Add(new RecoveredSlot(baseLocation + first + s, kind, address));
                    segment.MaxAddress = Math.Max(segment.MaxAddress, address);
                    report.Slots++;
                }
                else
                {
                    bad.Add((first + s, check, address));
                }
            }
        }

        // Slots from here on in the last segment were never durable: a torn tail.
        var keep = isLast ? mark.Keep(baseLocation + lastIntact) - baseLocation : whole;
        if (keep > whole)
        {
            throw new LogCorruptionException(
                $"Segment '{segment.Path}' holds {whole} whole slot(s), but {keep} of them were made durable ({DurableMark.FileName}): acknowledged writes are missing.");
        }

        foreach (var (slot, check, address) in bad)
        {
            if (slot >= keep)
            {
                continue;
            }

            report.CorruptLocations.Add(baseLocation + slot);
            if (check == SlotCheck.HeaderOk)
            {
                report.CorruptAddresses.Add(address);
                recovery.Slots.Add(new RecoveredSlot(baseLocation + slot, SlotKind.Corrupt, address));
                segment.MaxAddress = Math.Max(segment.MaxAddress, address);
            }
        }

        recovery.Slots.Sort((a, b) => a.Location.CompareTo(b.Location));
        if (isLast)
        {
            var kept = OffsetOf(keep);
            if (length > kept)
            {
                report.TornSlotsCut += whole - keep + ((length - SegmentFile.HeaderSize) % SlotSize > 0 ? 1 : 0);
                report.TornBytesCut += length - kept;
                RandomAccess.SetLength(segment.Handle, kept);
                RandomAccess.FlushToDisk(segment.Handle);
            }

            segment.Count = (int)keep;
        }
        else
        {
            segment.Count = _slotsPerSegment;
        }
    }
}
