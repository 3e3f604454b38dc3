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

    private static LogUnit OpenUnit(string directory, int slotsPerSegment = 8, FsyncPolicy fsync = FsyncPolicy.GroupCommit) => LogUnit.Open(new LogUnitOptions
    {
        BlockSize = BlockSize,
        DataDirectory = directory,
        SlotsPerSegment = slotsPerSegment,
        Fsync = fsync,
    });

    /// <summary>Writes blocks 0..<paramref name="count"/> - 1 at <paramref name="first"/> on, each acknowledged (durable), and closes the unit.</summary>
    private static async Task WriteDurable(string directory, int count, long first = 0)
    {
        using var unit = OpenUnit(directory, slotsPerSegment: 64);
        for (var a = 0; a < count; a++)
        {
            Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, first + a, Block(a))).Status);
        }
    }

    /// <summary>Flips one bit at <paramref name="offset"/> bytes into slot <paramref name="location"/> of the only segment.</summary>
    private static void FlipBit(string directory, int location, int offset)
    {
        var segment = Directory.GetFiles(directory, "segment-*.log").Single();
        var bytes = File.ReadAllBytes(segment);
        bytes[SegmentFile.HeaderSize + (location * (SlotHeader.Size + BlockSize)) + offset] ^= 0x10;
        File.WriteAllBytes(segment, bytes);
    }

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
        await WriteDurable(dir.Path, 9);

        // The tenth write never becomes durable (no fsync covers it), so the mark stays at 9 slots.
        using (var unit = OpenUnit(dir.Path, slotsPerSegment: 64, fsync: FsyncPolicy.None))
        {
            await unit.WriteAsync(0, 9, Block(9));
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

    /// <summary>
    /// A bit flipped in the last slot after it was made durable (and acknowledged) looks like a
    /// torn write; the durable mark tells them apart. The slot is kept as corrupt, its address is
    /// not written again and the seal counts it, so a reconfiguration that reaches only this
    /// replica does not hand the address out again (the simulation's seeds 10496 and 30546).
    /// </summary>
    [Theory]
    [InlineData(SlotHeader.Size + 7, true)]
    [InlineData(9, false)]
    public async Task AFlippedBitInTheLastDurableSlotIsCorruptionNotATornTail(int offset, bool headerIntact)
    {
        using var dir = new TempDirectory();
        await WriteDurable(dir.Path, 10, first: 100);

        FlipBit(dir.Path, 9, offset);
        using (var reopened = OpenUnit(dir.Path, slotsPerSegment: 64))
        {
            output.WriteLine(reopened.Recovery.ToString());
            Assert.Equal(0, reopened.Recovery.TornSlotsCut);
            Assert.Equal([9L], reopened.Recovery.CorruptLocations);
            Assert.Equal(headerIntact ? [109L] : [], reopened.Recovery.CorruptAddresses);
            Assert.Equal(headerIntact ? LogStatus.Corrupt : LogStatus.Unwritten, (await reopened.ReadAsync(0, 109, new byte[BlockSize])).Status);
            if (headerIntact)
            {
                Assert.Equal(LogStatus.Written, (await reopened.WriteAsync(0, 109, Block(9))).Status);
            }

            Assert.Equal(new UnitReply(LogStatus.Ok, 109), await reopened.SealAsync(1));
            Assert.Equal(LogStatus.Ok, (await reopened.WriteAsync(1, 110, Block(10))).Status);
        }

        // The damaged slot keeps its place: the slot written after it is read back after a restart.
        using var again = OpenUnit(dir.Path, slotsPerSegment: 64);
        Assert.Equal(0, again.Recovery.TornSlotsCut);
        Assert.Equal(Block(10), await ReadAsync(again, 110, 1));
        Assert.Equal(110, (await again.HighestAsync(1)).Value);
    }

    [Fact]
    public async Task WithItsDurableMarkDamagedAUnitJudgesItsTailAsBeforeAndWritesANewMark()
    {
        using var dir = new TempDirectory();
        await WriteDurable(dir.Path, 10);

        // Damaged and too long: the new mark must still be read back whole.
        var mark = Path.Combine(dir.Path, DurableMark.FileName);
        var bytes = File.ReadAllBytes(mark);
        bytes[9] ^= 1;
        File.WriteAllBytes(mark, [.. bytes, 0, 0, 0]);
        FlipBit(dir.Path, 9, SlotHeader.Size + 3);
        using (var reopened = OpenUnit(dir.Path, slotsPerSegment: 64))
        {
            Assert.True(reopened.Recovery.DurableMarkDamaged);
            Assert.Equal(1, reopened.Recovery.TornSlotsCut);
            Assert.Contains("durable mark damaged", reopened.Recovery.ToString(), StringComparison.Ordinal);
        }

        Assert.Equal(new DurableMark(9, 8), DurableMark.Load(dir.Path));
    }

    [Fact]
    public async Task ADataDirectoryMissingDurableSlotsRefusesToStart()
    {
        using var dir = new TempDirectory();
        await WriteDurable(dir.Path, 10);

        var segment = Directory.GetFiles(dir.Path, "segment-*.log").Single();
        using (var file = new FileStream(segment, FileMode.Open, FileAccess.ReadWrite))
        {
            file.SetLength(SegmentFile.HeaderSize + (8L * (SlotHeader.Size + BlockSize)));
        }

        var e = Assert.Throws<LogCorruptionException>(() => OpenUnit(dir.Path, slotsPerSegment: 64));
        output.WriteLine(e.Message);
        Assert.Contains("10 of them were made durable", e.Message, StringComparison.Ordinal);
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
            // Every slot was acknowledged, so durable: a flip is corruption even in the last slot.
            var detected = report.CorruptLocations.Contains(damaged) && report.TornSlotsCut == 0;
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
