using Hyder.Log.Storage;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

public sealed class LogUnitTests
{
    private static LogUnit MemoryUnit(int blockSize = 256) => LogUnit.Open(new LogUnitOptions { BlockSize = blockSize });

    private static byte[] Bytes(byte value, int length = 16) => Enumerable.Repeat(value, length).ToArray();

    /// <summary>
    /// A duplicate or retried write (or a fill) of an address whose first write is not yet durable
    /// is answered only once that slot is durable. Before, the repeat answered Written at once; a
    /// client whose first request to the tail was delivered twice counted the chain complete and
    /// acknowledged a block that a crash then took from the tail (the simulation's seed 70157).
    /// </summary>
    [Fact]
    public async Task AnAnswerAboutASlotAlreadyThereWaitsUntilThatSlotIsDurable()
    {
        var store = new GatedStore(SlotHeader.Size + 256);
        using var unit = LogUnit.OpenOn(store, 256);
        var first = unit.WriteAsync(0, 7, Bytes(1)).AsTask();
        var repeat = unit.WriteAsync(0, 7, Bytes(1)).AsTask();
        var fill = unit.FillAsync(0, 7).AsTask();
        var filled = unit.FillAsync(0, 8).AsTask();
        var fillAgain = unit.FillAsync(0, 8).AsTask();
        await Task.Delay(50);
        Assert.All(new Task[] { first, repeat, fill, filled, fillAgain }, t => Assert.False(t.IsCompleted));

        store.Sync();
        Assert.Equal(LogStatus.Ok, (await first).Status);
        Assert.Equal(LogStatus.Written, (await repeat).Status);
        Assert.Equal(LogStatus.Written, (await fill).Status);
        Assert.Equal(LogStatus.Ok, (await filled).Status);
        Assert.Equal(LogStatus.Ok, (await fillAgain).Status);

        // Once durable, a repeat is answered at once.
        var late = unit.WriteAsync(0, 7, Bytes(1)).AsTask();
        Assert.True(late.IsCompleted);
        Assert.Equal(LogStatus.Written, (await late).Status);
    }

    [Fact]
    public async Task SecondWriteToAnAddressAnswersWrittenAndChangesNothing()
    {
        using var unit = MemoryUnit();
        Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, 7, Bytes(1))).Status);
        Assert.Equal(LogStatus.Written, (await unit.WriteAsync(0, 7, Bytes(2))).Status);
        Assert.Equal(LogStatus.Written, (await unit.FillAsync(0, 7)).Status);
        var buffer = new byte[256];
        var read = await unit.ReadAsync(0, 7, buffer);
        Assert.Equal(new UnitReply(LogStatus.Ok, 16), read);
        Assert.Equal(Bytes(1), buffer[..16]);
    }

    [Fact]
    public async Task SealedUnitRejectsRequestsFromAnOlderEpoch()
    {
        using var unit = MemoryUnit();
        await unit.WriteAsync(1, 0, Bytes(1));
        Assert.Equal(new UnitReply(LogStatus.Ok, 0), await unit.SealAsync(2));
        Assert.Equal(new UnitReply(LogStatus.StaleEpoch, 2), await unit.WriteAsync(1, 1, Bytes(1)));
        Assert.Equal(new UnitReply(LogStatus.StaleEpoch, 2), await unit.ReadAsync(1, 0, new byte[256]));
        Assert.Equal(new UnitReply(LogStatus.StaleEpoch, 2), await unit.FillAsync(1, 1));
        Assert.Equal(new UnitReply(LogStatus.StaleEpoch, 2), await unit.SealAsync(1));
        Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(2, 1, Bytes(1))).Status);
    }

    [Fact]
    public async Task SealAnswersTheHighestAddressWritten()
    {
        using var unit = MemoryUnit();
        Assert.Equal(-1, (await unit.SealAsync(1)).Value);
        await unit.WriteAsync(1, 9, Bytes(1));
        await unit.FillAsync(1, 12);
        await unit.WriteAsync(1, 3, Bytes(1));
        Assert.Equal(new UnitReply(LogStatus.Ok, 12), await unit.SealAsync(2));
    }

    [Fact]
    public async Task WrongBlockSizeAndOutOfRangeAddressGetClearStatuses()
    {
        using var unit = MemoryUnit(blockSize: 256);
        Assert.Equal(LogStatus.WrongBlockSize, (await unit.WriteAsync(0, 0, new byte[257])).Status);
        Assert.Equal(LogStatus.WrongBlockSize, (await unit.WriteAsync(0, 0, Array.Empty<byte>())).Status);
        Assert.Equal(LogStatus.OutOfRange, (await unit.WriteAsync(0, -1, Bytes(1))).Status);
        Assert.Equal(LogStatus.OutOfRange, (await unit.WriteAsync(0, LogAddress.Max + 1, Bytes(1))).Status);
        Assert.Equal(LogStatus.OutOfRange, (await unit.ReadAsync(0, -5, new byte[256])).Status);
        Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, LogAddress.Max, new byte[256])).Status);
    }

    [Fact]
    public async Task ReadingTrimmedSpaceIsAnErrorNeverStaleData()
    {
        using var unit = MemoryUnit();
        for (var a = 0; a < 10; a++)
        {
            await unit.WriteAsync(0, a, Bytes((byte)a));
        }

        await unit.TrimAsync(0, 8);
        await unit.PrefixTrimAsync(0, 5);
        var buffer = new byte[256];
        Assert.Equal(LogStatus.Trimmed, (await unit.ReadAsync(0, 4, buffer)).Status);
        Assert.Equal(LogStatus.Trimmed, (await unit.ReadAsync(0, 8, buffer)).Status);
        Assert.Equal(LogStatus.Trimmed, (await unit.WriteAsync(0, 8, Bytes(1))).Status);
        Assert.Equal(LogStatus.Trimmed, (await unit.WriteAsync(0, 2, Bytes(1))).Status);
        Assert.Equal(LogStatus.Ok, (await unit.ReadAsync(0, 9, buffer)).Status);
    }

    [Fact]
    public async Task FillMarksAHoleAndLosesToAnEarlierWrite()
    {
        using var unit = MemoryUnit();
        Assert.Equal(LogStatus.Ok, (await unit.FillAsync(0, 3)).Status);
        Assert.Equal(LogStatus.Ok, (await unit.FillAsync(0, 3)).Status);
        Assert.Equal(LogStatus.Filled, (await unit.ReadAsync(0, 3, new byte[256])).Status);
        Assert.Equal(new UnitReply(LogStatus.Written, 1), await unit.WriteAsync(0, 3, Bytes(1)));
        Assert.Equal(LogStatus.Unwritten, (await unit.ReadAsync(0, 4, new byte[256])).Status);
    }

    /// <summary>Slots in memory that become durable only when the test says so.</summary>
    private sealed class GatedStore(int slotSize) : ISlotStore
    {
        private readonly List<byte[]> _slots = [];
        private readonly List<(long Location, TaskCompletionSource Done)> _waiters = [];
        private int _durable;

        public int SlotSize { get; } = slotSize;

        public StoreRecovery Recover() => new();

        public long Append(ReadOnlySpan<byte> slot, long address)
        {
            _slots.Add(slot.ToArray());
            return _slots.Count - 1;
        }

        public ValueTask WaitDurableAsync(long location)
        {
            lock (_waiters)
            {
                if (location < _durable)
                {
                    return default;
                }

                var done = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
                _waiters.Add((location, done));
                return new ValueTask(done.Task);
            }
        }

        /// <summary>An fsync: everything appended so far is durable.</summary>
        public void Sync()
        {
            List<TaskCompletionSource> ready;
            lock (_waiters)
            {
                _durable = _slots.Count;
                ready = [.. _waiters.Where(w => w.Location < _durable).Select(w => w.Done)];
                _waiters.RemoveAll(w => w.Location < _durable);
            }

            ready.ForEach(done => done.SetResult());
        }

        public bool TryRead(long location, Span<byte> slot)
        {
            _slots[(int)location].CopyTo(slot);
            return true;
        }

        public void SaveMetadata(UnitMetadata metadata)
        {
        }

        public void ReleaseBelow(long trimMark)
        {
        }

        public void Dispose()
        {
        }
    }
}
