using System.Runtime.CompilerServices;
using Hyder.Log.Storage;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Units;

public sealed partial class LogUnit
{
    /// <inheritdoc />
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default)
    {
        if (!LogAddress.IsValid(address))
        {
            return new UnitReply(LogStatus.OutOfRange, 0);
        }

        IndexEntry entry;
        lock (_lock)
        {
            if (epoch < _epoch)
            {
                return new UnitReply(LogStatus.StaleEpoch, _epoch);
            }

            if (address < _trimMark)
            {
                return new UnitReply(LogStatus.Trimmed, 0);
            }

            if (!_index.TryGetValue(address, out entry))
            {
                return new UnitReply(LogStatus.Unwritten, 0);
            }
        }

        switch (entry.Kind)
        {
            case SlotKind.Trim:
                return new UnitReply(LogStatus.Trimmed, 0);
            case SlotKind.Corrupt:
                return new UnitReply(LogStatus.Corrupt, 0);
        }

        // Visible only once durable: a reader never sees a block that a crash could take back.
        await _store.WaitDurableAsync(entry.Location).ConfigureAwait(false);
        if (entry.Kind == SlotKind.Fill)
        {
            return new UnitReply(LogStatus.Filled, 0);
        }

        var slot = BufferPool.Arrays.Rent(_store.SlotSize);
        try
        {
            if (!_store.TryRead(entry.Location, slot))
            {
                return new UnitReply(LogStatus.Trimmed, 0);
            }

            var check = SlotHeader.Check(slot.AsSpan(0, _store.SlotSize), _blockSize, out var kind, out var stored, out var length);
            if (check != SlotCheck.Ok || kind != SlotKind.Data || stored != address)
            {
                LogCorruptRead(address, entry.Location, check.ToString());
                return new UnitReply(LogStatus.Corrupt, 0);
            }

            if (destination.Length < length)
            {
                return new UnitReply(LogStatus.WrongBlockSize, _blockSize);
            }

            slot.AsSpan(SlotHeader.Size, length).CopyTo(destination.Span);
            return new UnitReply(LogStatus.Ok, length);
        }
        finally
        {
            BufferPool.Arrays.Return(slot);
        }
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Address {Address} at slot {Location} failed its checksum on read ({Check}); answering Corrupt")]
    private partial void LogCorruptRead(long address, long location, string check);
}
