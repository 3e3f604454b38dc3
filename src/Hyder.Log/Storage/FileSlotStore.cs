using System.Runtime.InteropServices;
using Microsoft.Win32.SafeHandles;

namespace Hyder.Log.Storage;

/// <summary>
/// Slots in segment files of a data directory: append-only, fixed-size slots, one group-commit
/// flusher. Invariants: locations only grow; a segment is rolled only when full and is flushed
/// before the next one is created, so every segment but the last is complete; only the last
/// segment can have a torn tail.
/// </summary>
internal sealed partial class FileSlotStore : ISlotStore
{
    /// <summary><c>POSIX_FADV_DONTNEED</c> on Linux.</summary>
    private const int PosixFadvDontNeed = 4;

    private readonly string _directory;
    private readonly int _blockSize;
    private readonly int _slotsPerSegment;
    private readonly FsyncPolicy _policy;
    private readonly object _segmentsLock = new();
    private readonly SortedDictionary<long, SegmentFile> _segments = [];
    private readonly GroupCommit? _commit;
    private SegmentFile? _active;
    private long _next;
    private long _highestAppended = -1;
    private SafeFileHandle? _markHandle;
    private DurableMark _written = DurableMark.None;
    private readonly int _cachedSlots;
    private long _dropSegment = -1;
    private long _dropOffset;
    private long _droppedBytes;

    /// <summary>
    /// Opens (or creates) the store in <paramref name="directory"/>; <paramref name="delay"/> is
    /// group commit's wait for more writes (none by default); <paramref name="cachedSlots"/> is
    /// how many of the newest durable slots stay in the page cache (<see cref="Units.LogUnitOptions.CachedSlots"/>;
    /// 0, the default here, leaves the page cache to the kernel).
    /// </summary>
    public FileSlotStore(string directory, int blockSize, int slotsPerSegment, FsyncPolicy policy, GroupCommitDelay delay = default, int cachedSlots = 0)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(cachedSlots);
        ArgumentOutOfRangeException.ThrowIfLessThan(slotsPerSegment, 2);
        Directory.CreateDirectory(directory);
        _directory = directory;
        _blockSize = blockSize;
        _slotsPerSegment = slotsPerSegment;
        _policy = policy;
        SlotSize = SlotHeader.Size + blockSize;
        if (policy == FsyncPolicy.GroupCommit)
        {
            _cachedSlots = Units.LogUnitOptions.DropsPages(policy, cachedSlots) ? cachedSlots : 0;
            _commit = new GroupCommit(FlushActive, "hyder-log-fsync", delay, _cachedSlots > 0 ? DropBehind : null);
        }
    }

    /// <inheritdoc />
    public int SlotSize { get; }

    /// <summary>Where slot <paramref name="slotInSegment"/> of a segment starts in its file (a slot count gives where the slots before it end).</summary>
    private long OffsetOf(long slotInSegment) => SegmentFile.HeaderSize + (slotInSegment * SlotSize);

    /// <summary>Fsync calls made by group commit (0 with <see cref="FsyncPolicy.None"/>).</summary>
    public long Flushes => _commit?.Flushes ?? 0;

    /// <summary>Group-commit flushes that waited for more writes first (<see cref="GroupCommitDelay"/>).</summary>
    public long DelayedFlushes => _commit?.Delayed ?? 0;

    /// <summary>Bytes of durable slots the store has told the kernel it no longer needs cached (<see cref="Units.LogUnitOptions.CachedSlots"/>).</summary>
    public long DroppedBytes => Volatile.Read(ref _droppedBytes);

    /// <inheritdoc />
    public long Append(ReadOnlySpan<byte> slot, long address)
    {
        var location = _next;
        var segmentIndex = location / _slotsPerSegment;
        if (_active is null || _active.Index != segmentIndex)
        {
            Roll(segmentIndex);
        }

        var active = _active!;
        var slotInSegment = (int)(location - (segmentIndex * _slotsPerSegment));
        RandomAccess.Write(active.Handle, slot, OffsetOf(slotInSegment));
        active.Count = slotInSegment + 1;
        active.MaxAddress = Math.Max(active.MaxAddress, address);

        // The flusher reads _next before _highestAppended: the highest it reads covers every slot it counts.
        Volatile.Write(ref _highestAppended, Math.Max(_highestAppended, address));
        Volatile.Write(ref _next, location + 1);
        _commit?.Appended(_next);
        return location;
    }

    /// <inheritdoc />
    public ValueTask WaitDurableAsync(long location) => _commit?.WaitAsync(location) ?? default;

    /// <inheritdoc />
    public bool TryRead(long location, Span<byte> slot)
    {
        SegmentFile? segment;
        lock (_segmentsLock)
        {
            if (!_segments.TryGetValue(location / _slotsPerSegment, out segment))
            {
                return false;
            }
        }

        var offset = OffsetOf(location % _slotsPerSegment);
        try
        {
            return RandomAccess.Read(segment.Handle, slot[..SlotSize], offset) == SlotSize;
        }
        catch (ObjectDisposedException)
        {
            return false;
        }
    }

    /// <inheritdoc />
    public void SaveMetadata(UnitMetadata metadata) => metadata.Save(_directory);

    /// <inheritdoc />
    public void ReleaseBelow(long trimMark)
    {
        List<SegmentFile> released = [];
        lock (_segmentsLock)
        {
            foreach (var segment in _segments.Values)
            {
                if (segment != _active && segment.MaxAddress < trimMark)
                {
                    released.Add(segment);
                }
            }

            foreach (var segment in released)
            {
                _segments.Remove(segment.Index);
            }
        }

        foreach (var segment in released)
        {
            segment.Dispose();
            File.Delete(segment.Path);
        }
    }

    private void Roll(long segmentIndex)
    {
        if (_active is not null)
        {
            // The full segment is made durable before writes move on, so only the last segment
            // of the directory can ever have a torn tail.
            RandomAccess.FlushToDisk(_active.Handle);
        }

        var segment = SegmentFile.Create(_directory, segmentIndex, _blockSize, _slotsPerSegment);
        lock (_segmentsLock)
        {
            _segments.Add(segmentIndex, segment);
            _active = segment;
        }
    }

    /// <summary>
    /// Makes every slot appended so far durable, then records how far that reached in the
    /// durable mark (flushed too) before group commit answers the waiters: a slot acknowledged is
    /// always below the mark, so recovery never cuts it as a torn write.
    /// </summary>
    private void FlushActive()
    {
        var slots = Volatile.Read(ref _next);
        var highest = Volatile.Read(ref _highestAppended);
        SegmentFile? active;
        lock (_segmentsLock)
        {
            active = _active;
        }

        // Slots of earlier segments were flushed when the segment rolled.
        if (active is not null)
        {
            RandomAccess.FlushToDisk(active.Handle);
        }

        if (_markHandle is not null && slots > _written.Slots)
        {
            var mark = new DurableMark(slots, Math.Max(highest, _written.Highest));
            mark.Write(_markHandle);
            _written = mark;
        }
    }

    /// <summary>
    /// Runs on the flusher after each flush: tells the kernel that the pages of durable slots more
    /// than <see cref="_cachedSlots"/> behind <paramref name="durable"/> are no longer needed, so
    /// that it frees them (they are clean) and the next writes take those pages instead of fresh
    /// memory. A page shared with a slot still cached stays; a segment behind the cached slots is
    /// dropped whole. Advice only: the data stays on the disk, and a failure changes nothing.
    /// </summary>
    private void DropBehind(long durable)
    {
        var keepFrom = durable - _cachedSlots;
        if (keepFrom <= 0)
        {
            return;
        }

        if (_dropSegment < 0)
        {
            lock (_segmentsLock)
            {
                _dropSegment = _segments.Count == 0 ? keepFrom / _slotsPerSegment : _segments.Keys.First();
            }
        }

        while (keepFrom > _dropSegment * _slotsPerSegment)
        {
            SegmentFile? segment;
            lock (_segmentsLock)
            {
                _segments.TryGetValue(_dropSegment, out segment);
            }

            var whole = keepFrom >= (_dropSegment + 1) * _slotsPerSegment;
            var end = whole
                ? OffsetOf(_slotsPerSegment)
                : OffsetOf(keepFrom - (_dropSegment * _slotsPerSegment)) & ~(long)(Environment.SystemPageSize - 1);
            if (segment is not null && end > _dropOffset)
            {
                try
                {
                    if (PosixFadvise(segment.Handle, _dropOffset, end - _dropOffset, PosixFadvDontNeed) == 0)
                    {
                        Interlocked.Add(ref _droppedBytes, end - _dropOffset);
                    }
                }
                catch (ObjectDisposedException)
                {
                    // Released by a prefix trim meanwhile: its pages went with the file.
                }
            }

            if (!whole)
            {
                _dropOffset = Math.Max(_dropOffset, end);
                return;
            }

            _dropSegment++;
            _dropOffset = 0;
        }
    }

    [LibraryImport("libc", EntryPoint = "posix_fadvise")]
    private static partial int PosixFadvise(SafeFileHandle fd, long offset, long length, int advice);

    /// <inheritdoc />
    public void Dispose()
    {
        _commit?.Dispose();
        _markHandle?.Dispose();
        lock (_segmentsLock)
        {
            foreach (var segment in _segments.Values)
            {
                segment.Dispose();
            }

            _segments.Clear();
        }
    }
}
