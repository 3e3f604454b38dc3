namespace Hyder.Log.Storage;

/// <summary>
/// Slots in memory, for tests and the in-memory embedded log. Chunks of slots are allocated as the
/// log grows (never per append) and dropped when a prefix trim passes them.
/// </summary>
internal sealed class MemorySlotStore : ISlotStore
{
    // 8 slots of 8 KiB stay below the large-object threshold (85,000 bytes): no gen-2 churn.
    private const int SlotsPerChunk = 8;

    private readonly object _lock = new();
    private readonly List<byte[]?> _chunks = [];
    private readonly List<long> _chunkMaxAddress = [];
    private long _next;
    private UnitMetadata _metadata;

    /// <summary>Creates a store for blocks of <paramref name="blockSize"/> bytes.</summary>
    public MemorySlotStore(int blockSize) => SlotSize = SlotHeader.Size + blockSize;

    /// <inheritdoc />
    public int SlotSize { get; }

    /// <inheritdoc />
    public StoreRecovery Recover() => new() { Metadata = _metadata };

    /// <inheritdoc />
    public long Append(ReadOnlySpan<byte> slot, long address)
    {
        lock (_lock)
        {
            var location = _next++;
            var chunk = (int)(location / SlotsPerChunk);
            if (chunk == _chunks.Count)
            {
                _chunks.Add(new byte[SlotsPerChunk * SlotSize]);
                _chunkMaxAddress.Add(-1);
            }

            slot.CopyTo(_chunks[chunk].AsSpan((int)(location % SlotsPerChunk) * SlotSize));
            _chunkMaxAddress[chunk] = Math.Max(_chunkMaxAddress[chunk], address);
            return location;
        }
    }

    /// <inheritdoc />
    public ValueTask WaitDurableAsync(long location) => default;

    /// <inheritdoc />
    public bool TryRead(long location, Span<byte> slot)
    {
        lock (_lock)
        {
            var chunk = _chunks[(int)(location / SlotsPerChunk)];
            if (chunk is null)
            {
                return false;
            }

            chunk.AsSpan((int)(location % SlotsPerChunk) * SlotSize, SlotSize).CopyTo(slot);
            return true;
        }
    }

    /// <inheritdoc />
    public void SaveMetadata(UnitMetadata metadata) => _metadata = metadata;

    /// <inheritdoc />
    public void ReleaseBelow(long trimMark)
    {
        lock (_lock)
        {
            // The last chunk is still being filled; it is never released.
            for (var i = 0; i < _chunks.Count - 1; i++)
            {
                if (_chunkMaxAddress[i] < trimMark)
                {
                    _chunks[i] = null;
                }
            }
        }
    }

    /// <inheritdoc />
    public void Dispose()
    {
    }
}
