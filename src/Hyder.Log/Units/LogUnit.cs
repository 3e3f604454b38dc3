using System.Runtime.CompilerServices;
using Hyder.Log.Storage;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Log.Units;

/// <summary>
/// A write-once log unit over a slot store. Invariants, checked under one lock:
/// an address maps to at most one data-or-fill slot (write-once); after <see cref="SealAsync"/>
/// answered epoch e no request of an epoch below e changes anything; an address below the trim
/// mark or trimmed by point answers <see cref="LogStatus.Trimmed"/>, never data. A write is
/// visible to reads only once durable, so a reader never sees a block a crash could take back.
/// </summary>
public sealed partial class LogUnit : ILogUnit, IDisposable
{
    private readonly ISlotStore _store;
    private readonly int _blockSize;
    private readonly ILogger _logger;
    private readonly object _lock = new();
    private readonly object _metadataLock = new();
    private readonly SlotIndex _index = new();
    private long _epoch;
    private long _trimMark;
    private long _highest = -1;

    private LogUnit(ISlotStore store, int blockSize, ILogger logger)
    {
        _store = store;
        _blockSize = blockSize;
        _logger = logger;
    }

    /// <summary>The largest block this unit stores.</summary>
    public int BlockSize => _blockSize;

    /// <summary>What start-up recovery found.</summary>
    public RecoveryReport Recovery { get; private set; } = new();

    /// <summary>The epoch the unit is sealed at.</summary>
    public long Epoch
    {
        get
        {
            lock (_lock)
            {
                return _epoch;
            }
        }
    }

    /// <summary>Opens a unit: on disk if <see cref="LogUnitOptions.DataDirectory"/> is set, else in memory.</summary>
    public static LogUnit Open(LogUnitOptions options, ILogger? logger = null)
    {
        options.Validate();
        ISlotStore store = options.DataDirectory is null
            ? new MemorySlotStore(options.BlockSize)
            : new FileSlotStore(options.DataDirectory, options.BlockSize, options.SlotsPerSegment, options.Fsync, new GroupCommitDelay(options.CommitDelay, options.CommitSiblings), options.CachedSlots);
        var unit = new LogUnit(store, options.BlockSize, logger ?? NullLogger.Instance);
        try
        {
            unit.Recover();
        }
        catch
        {
            store.Dispose();
            throw;
        }

        return unit;
    }

    /// <summary>
    /// Opens a unit over a slot store of the caller's (the simulation's disk), running the same
    /// recovery as <see cref="Open(LogUnitOptions, ILogger?)"/>.
    /// </summary>
    internal static LogUnit OpenOn(ISlotStore store, int blockSize, ILogger? logger = null)
    {
        var unit = new LogUnit(store, blockSize, logger ?? NullLogger.Instance);
        unit.Recover();
        return unit;
    }

    /// <inheritdoc />
    /// <remarks>
    /// Not an async method: the slot is written (copied into the store) at once, and the wait for
    /// its fsync is a pooled <see cref="DurableReply"/>, so a write allocates nothing even with many
    /// in flight.
    /// </remarks>
    public ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default)
    {
        if (!LogAddress.IsValid(address))
        {
            return new ValueTask<UnitReply>(new UnitReply(LogStatus.OutOfRange, 0));
        }

        if (block.Length == 0 || block.Length > _blockSize)
        {
            return new ValueTask<UnitReply>(new UnitReply(LogStatus.WrongBlockSize, _blockSize));
        }

        UnitReply reply;
        long location;
        var slot = BufferPool.Arrays.Rent(_store.SlotSize);
        try
        {
            SlotHeader.Encode(slot.AsSpan(0, _store.SlotSize), SlotKind.Data, address, block.Span);
            (reply, location) = AppendSlot(epoch, address, SlotKind.Data, slot);
        }
        catch (Exception e)
        {
            // A failing store fails the task, as the awaiting caller expects, not the call.
            return ValueTask.FromException<UnitReply>(e);
        }
        finally
        {
            // The store copied the slot (ISlotStore.Append); only durability is awaited.
            BufferPool.Arrays.Return(slot);
        }

        // A fresh slot, or an answer about one already there (a duplicate or retried write), is
        // given only once that slot is durable: the writer must never count on a copy that a crash
        // could still take back (the simulation's seed 70157).
        return location < 0 ? new ValueTask<UnitReply>(reply) : DurableReply.When(_store.WaitDurableAsync(location), reply);
    }

    /// <inheritdoc />
    public ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
        AppendMarkerAsync(epoch, address, SlotKind.Fill);

    /// <inheritdoc />
    public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
        AppendMarkerAsync(epoch, address, SlotKind.Trim);

    /// <summary>Writes a slot that carries no data (a fill or a trim mark) and waits until it is durable.</summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<UnitReply> AppendMarkerAsync(long epoch, long address, SlotKind kind)
    {
        if (!LogAddress.IsValid(address))
        {
            return new UnitReply(LogStatus.OutOfRange, 0);
        }

        var slot = BufferPool.Arrays.Rent(_store.SlotSize);
        try
        {
            SlotHeader.Encode(slot.AsSpan(0, _store.SlotSize), kind, address, []);
            var (reply, location) = AppendSlot(epoch, address, kind, slot);
            if (location >= 0)
            {
                await _store.WaitDurableAsync(location).ConfigureAwait(false);
            }

            return reply;
        }
        finally
        {
            BufferPool.Arrays.Return(slot);
        }
    }

    private (UnitReply Reply, long Location) AppendSlot(long epoch, long address, SlotKind kind, byte[] slot)
    {
        lock (_lock)
        {
            if (epoch < _epoch)
            {
                return (new UnitReply(LogStatus.StaleEpoch, _epoch), -1);
            }

            if (address < _trimMark)
            {
                return (new UnitReply(kind == SlotKind.Trim ? LogStatus.Ok : LogStatus.Trimmed, 0), -1);
            }

            var exists = _index.TryGetValue(address, out var existing);
            if (exists && (kind != SlotKind.Trim || existing.Kind == SlotKind.Trim))
            {
                // An answer about a block or fill already there names its slot, so that the caller
                // waits until it is durable (a trim or a trimmed address has nothing to wait for).
                var answer = AnswerExisting(kind, existing.Kind);
                return (answer, existing.Kind is SlotKind.Data or SlotKind.Fill ? existing.Location : -1);
            }

            // A trim supersedes whatever the address held; everything else fills an empty address.
            Invariant.Assert(epoch >= _epoch && address >= _trimMark, "a slot is written under an older seal or below the trim mark", epoch, address);
            Invariant.Assert(!exists || kind == SlotKind.Trim, "write-once: only a trim may follow a slot", address, (long)existing.Kind);
            var location = _store.Append(slot.AsSpan(0, _store.SlotSize), address);
            _index.Set(address, new IndexEntry(location, kind));
            _highest = Math.Max(_highest, address);
            Invariant.Assert(_index.TryGetValue(address, out var entry) && entry == new IndexEntry(location, kind), "the index does not hold the slot just written", address, location);
            return (UnitReply.Ok, location);
        }
    }

    private static UnitReply AnswerExisting(SlotKind request, SlotKind existing) => (request, existing) switch
    {
        (SlotKind.Trim, _) => UnitReply.Ok,
        (_, SlotKind.Trim) => new UnitReply(LogStatus.Trimmed, 0),
        (SlotKind.Fill, SlotKind.Fill) => UnitReply.Ok,
        _ => new UnitReply(LogStatus.Written, existing == SlotKind.Fill ? 1 : 0),
    };

    /// <inheritdoc />
    public void Dispose() => _store.Dispose();
}
