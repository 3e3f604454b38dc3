using FsCheck;
using FsCheck.Fluent;
using FsCheck.Xunit;
using Hyder.Log.Storage;
using Hyder.Log.Units;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Log.Tests;

public sealed class StorageTests(ITestOutputHelper output)
{
    private const int BlockSize = 512;

    private static LogUnit OpenUnit(string directory, int slotsPerSegment = 8) => LogUnit.Open(new LogUnitOptions
    {
        BlockSize = BlockSize,
        DataDirectory = directory,
        SlotsPerSegment = slotsPerSegment,
    });

    private static byte[] Block(long address, int length = 300)
    {
        var block = new byte[length];
        new Random((int)address).NextBytes(block);
        return block;
    }

    private static async Task<byte[]?> ReadAsync(LogUnit unit, long address, long epoch = 0)
    {
        var buffer = new byte[BlockSize];
        var reply = await unit.ReadAsync(epoch, address, buffer);
        return reply.Status == LogStatus.Ok ? buffer[..(int)reply.Value] : null;
    }

    [Fact]
    public void SlotHeaderRoundTripsAndEveryFlippedBitIsDetected()
    {
        var slot = new byte[SlotHeader.Size + BlockSize];
        SlotHeader.Encode(slot, SlotKind.Data, 42, Block(42));
        Assert.Equal(SlotCheck.Ok, SlotHeader.Check(slot, BlockSize, out var kind, out var address, out var length));
        Assert.Equal((SlotKind.Data, 42L, 300), (kind, address, length));
        for (var bit = 0; bit < slot.Length * 8; bit += 7)
        {
            slot[bit / 8] ^= (byte)(1 << (bit % 8));
            Assert.NotEqual(SlotCheck.Ok, SlotHeader.Check(slot, BlockSize, out _, out _, out _));
            slot[bit / 8] ^= (byte)(1 << (bit % 8));
        }
    }

    [Fact]
    public async Task AcknowledgedWritesAreReadBackAfterReopeningAcrossSegments()
    {
        using var dir = new TempDirectory();
        using (var unit = OpenUnit(dir.Path))
        {
            await Task.WhenAll(Enumerable.Range(0, 50).Select(a => unit.WriteAsync(0, a, Block(a)).AsTask()));
        }

        Assert.True(Directory.GetFiles(dir.Path, "segment-*.log").Length >= 7);
        using var reopened = OpenUnit(dir.Path);
        Assert.Equal(50, reopened.Recovery.Slots);
        Assert.Empty(reopened.Recovery.CorruptLocations);
        for (var a = 0; a < 50; a++)
        {
            Assert.Equal(Block(a), await ReadAsync(reopened, a));
        }

        Assert.Equal(new UnitReply(LogStatus.Ok, 49), await reopened.SealAsync(1));
    }

    [Fact]
    public async Task TornTailIsCutAtRecoveryAndItsAddressesCanBeWrittenAgain()
    {
        using var dir = new TempDirectory();
        using (var unit = OpenUnit(dir.Path, slotsPerSegment: 64))
        {
            for (var a = 0; a < 10; a++)
            {
                await unit.WriteAsync(0, a, Block(a));
            }
        }

        // The last whole slot loses its body half way, and a partial slot trails it: a crash mid-write.
        var segment = Directory.GetFiles(dir.Path, "segment-*.log").Single();
        var slotSize = SlotHeader.Size + BlockSize;
        using (var file = new FileStream(segment, FileMode.Open, FileAccess.ReadWrite))
        {
            file.Position = SegmentFile.HeaderSize + (9L * slotSize) + SlotHeader.Size + 100;
            file.Write(new byte[200]);
            file.Position = file.Length;
            file.Write(new byte[slotSize / 2]);
        }

        using var reopened = OpenUnit(dir.Path, slotsPerSegment: 64);
        output.WriteLine(reopened.Recovery.ToString());
        Assert.Equal(2, reopened.Recovery.TornSlotsCut);
        Assert.Empty(reopened.Recovery.CorruptLocations);
        Assert.Equal(SegmentFile.HeaderSize + (9L * slotSize), new FileInfo(segment).Length);
        Assert.Equal(LogStatus.Unwritten, (await reopened.ReadAsync(0, 9, new byte[BlockSize])).Status);
        Assert.Equal(Block(8), await ReadAsync(reopened, 8));
        Assert.Equal(LogStatus.Ok, (await reopened.WriteAsync(0, 9, Block(9))).Status);
        Assert.Equal(Block(9), await ReadAsync(reopened, 9));
    }

    [Property(MaxTest = 40)]
    public Property RandomBitFlipsInSegmentFilesAreAlwaysDetected()
    {
        const int Count = 12;
        var slotSize = SlotHeader.Size + BlockSize;
        var gen = Gen.Choose(0, (Count * slotSize) - 1).SelectMany(_ => Gen.Choose(0, 7), (offset, bit) => (offset, bit));
        return Prop.ForAll(gen.ToArbitrary(), flip =>
        {
            using var dir = new TempDirectory();
            using (var unit = OpenUnit(dir.Path, slotsPerSegment: 64))
            {
                for (var a = 0; a < Count; a++)
                {
                    unit.WriteAsync(0, a, Block(a)).AsTask().GetAwaiter().GetResult();
                }
            }

            var segment = Directory.GetFiles(dir.Path, "segment-*.log").Single();
            var bytes = File.ReadAllBytes(segment);
            bytes[SegmentFile.HeaderSize + flip.offset] ^= (byte)(1 << flip.bit);
            File.WriteAllBytes(segment, bytes);
            var damaged = flip.offset / slotSize;

            using var reopened = OpenUnit(dir.Path, slotsPerSegment: 64);
            var report = reopened.Recovery;
            var detected = report.CorruptLocations.Contains(damaged) || (damaged == Count - 1 && report.TornSlotsCut == 1);
            for (var a = 0; a < Count; a++)
            {
                var buffer = new byte[BlockSize];
                var reply = reopened.ReadAsync(0, a, buffer).AsTask().GetAwaiter().GetResult();
                if (reply.Status == LogStatus.Ok && !buffer.AsSpan(0, (int)reply.Value).SequenceEqual(Block(a)))
                {
                    return false;
                }

                if (reply.Status != LogStatus.Ok && a != damaged)
                {
                    return false;
                }
            }

            return detected;
        });
    }

    [Fact]
    public async Task SealAndTrimMarkSurviveReopeningAndPrefixTrimDeletesWholeSegments()
    {
        using var dir = new TempDirectory();
        using (var unit = OpenUnit(dir.Path, slotsPerSegment: 4))
        {
            for (var a = 0; a < 20; a++)
            {
                await unit.WriteAsync(0, a, Block(a));
            }

            Assert.Equal(5, Directory.GetFiles(dir.Path, "segment-*.log").Length);
            Assert.Equal(LogStatus.Ok, (await unit.SealAsync(3)).Status);
            Assert.Equal(LogStatus.Ok, (await unit.PrefixTrimAsync(3, 10)).Status);
            Assert.Equal(3, Directory.GetFiles(dir.Path, "segment-*.log").Length);
            Assert.Equal(LogStatus.Ok, (await unit.TrimAsync(3, 15)).Status);
        }

        using var reopened = OpenUnit(dir.Path, slotsPerSegment: 4);
        Assert.Equal(3, reopened.Epoch);
        Assert.Equal(LogStatus.StaleEpoch, (await reopened.WriteAsync(2, 30, Block(30))).Status);
        Assert.Equal(LogStatus.Trimmed, (await reopened.ReadAsync(3, 9, new byte[BlockSize])).Status);
        Assert.Equal(LogStatus.Trimmed, (await reopened.ReadAsync(3, 15, new byte[BlockSize])).Status);
        Assert.Equal(Block(14), await ReadAsync(reopened, 14, 3));
        Assert.Equal(19, (await reopened.HighestAsync(3)).Value);
    }

    /// <summary>
    /// A unit stopped during a prefix trim, after it saved the mark and before it deleted the
    /// segment files below it: reopened, it deletes them, and reads below the mark answer Trimmed.
    /// </summary>
    [Fact]
    public async Task AUnitStoppedDuringAPrefixTrimDeletesTheSegmentsBelowItsMarkWhenReopened()
    {
        using var dir = new TempDirectory();
        using (var unit = OpenUnit(dir.Path, slotsPerSegment: 4))
        {
            for (var a = 0; a < 20; a++)
            {
                await unit.WriteAsync(0, a, Block(a));
            }
        }

        // What the trim had done when the process stopped: the mark is saved, no file is deleted yet.
        new UnitMetadata(0, 10).Save(dir.Path);
        Assert.Equal(5, Directory.GetFiles(dir.Path, "segment-*.log").Length);

        using var reopened = OpenUnit(dir.Path, slotsPerSegment: 4);
        Assert.Equal(3, Directory.GetFiles(dir.Path, "segment-*.log").Length);
        Assert.Equal(LogStatus.Trimmed, (await reopened.ReadAsync(0, 9, new byte[BlockSize])).Status);
        Assert.Equal(Block(10), await ReadAsync(reopened, 10));

        // The trim, issued again, completes as a no-op.
        Assert.Equal(LogStatus.Ok, (await reopened.PrefixTrimAsync(0, 10)).Status);
        Assert.Equal(Block(19), await ReadAsync(reopened, 19));
    }

    [Fact]
    public async Task GroupCommitSharesOneFsyncAmongConcurrentWriters()
    {
        using var dir = new TempDirectory();
        using var unit = OpenUnit(dir.Path, slotsPerSegment: 1024);
        await Task.WhenAll(Enumerable.Range(0, 400).Select(a => Task.Run(() => unit.WriteAsync(0, a, Block(a)).AsTask())));
        var store = (FileSlotStore)typeof(LogUnit).GetField("_store", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!.GetValue(unit)!;
        output.WriteLine($"400 writes, {store.Flushes} fsyncs");
        Assert.InRange(store.Flushes, 1, 399);
    }
}
