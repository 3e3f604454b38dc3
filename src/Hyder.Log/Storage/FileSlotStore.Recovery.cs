
namespace Hyder.Log.Storage;

internal sealed partial class FileSlotStore
{
    private const int ScanSlots = 32;

    /// <summary>
    /// Reads every segment in order. In the last segment, the run of bad slots after the last
    /// intact one (and any partial slot) is a torn tail: it was never acknowledged, so it is cut.
    /// A bad slot before an intact one is corruption: it is reported and, if its header is intact,
    /// its address answers <see cref="LogStatus.Corrupt"/>; it is never returned as data.
    /// </summary>
    public StoreRecovery Recover()
    {
        var recovery = new StoreRecovery { Metadata = UnitMetadata.Load(_directory) };
        var report = recovery.Report;
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
                    if (!isLast || RandomAccess.GetLength(segment.Handle) >= SegmentFile.HeaderSize + SlotSize)
                    {
                        throw new LogCorruptionException($"Segment '{segment.Path}': {problem}; its slots cannot be located.");
                    }

                    // A segment whose creation was torn holds nothing: start it again.
                    report.TornBytesCut += RandomAccess.GetLength(segment.Handle);
                    segment.ResetHeader(_blockSize, _slotsPerSegment);
                }
                else
                {
                    ScanSegment(segment, isLast, buffer, recovery);
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
        _commit?.Recovered(_next);
        return recovery;
    }

    private void ScanSegment(SegmentFile segment, bool isLast, byte[] buffer, StoreRecovery recovery)
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
            RandomAccess.Read(segment.Handle, span, SegmentFile.HeaderSize + ((long)first * SlotSize));
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

        foreach (var (slot, check, address) in bad)
        {
            if (isLast && slot > lastIntact)
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
            var keep = SegmentFile.HeaderSize + ((long)(lastIntact + 1) * SlotSize);
            if (length > keep)
            {
                report.TornSlotsCut += whole - (lastIntact + 1) + ((length - SegmentFile.HeaderSize) % SlotSize > 0 ? 1 : 0);
                report.TornBytesCut += length - keep;
                RandomAccess.SetLength(segment.Handle, keep);
                RandomAccess.FlushToDisk(segment.Handle);
            }

            segment.Count = lastIntact + 1;
        }
        else
        {
            segment.Count = _slotsPerSegment;
        }
    }
}
