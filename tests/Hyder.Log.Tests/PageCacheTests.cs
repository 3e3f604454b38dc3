using System.IO.MemoryMappedFiles;
using System.Runtime.InteropServices;
using Hyder.Log.Storage;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>
/// <see cref="LogUnitOptions.CachedSlots"/>: after each group-commit fsync a unit drops the pages
/// of durable slots behind its newest ones from the page cache (docs/log.md, "The page cache").
/// Residency is read back with <c>mincore</c> on a mapping of the segment file.
/// </summary>
public sealed partial class PageCacheTests
{
    private const int BlockSize = 8192;
    private const int SlotsPerSegment = 64;
    private const int Cached = 8;

    [Fact]
    public async Task DurableSlotsBehindTheCachedOnesLeaveThePageCacheAndAreStillRead()
    {
        using var dir = new TempDirectory();
        const int count = (2 * SlotsPerSegment) + 40;
        using (var unit = Open(dir.Path, Cached))
        {
            for (var a = 0; a < count; a++)
            {
                Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, a, Block(a))).Status);
            }

            var store = StoreOf(unit);
            if (!OperatingSystem.IsLinux())
            {
                // Elsewhere the page cache is left to the system.
                Assert.Equal(0, store.DroppedBytes);
                return;
            }

            // The drop runs on the flusher after it answers the writers: wait for the last one's.
            var slotSize = SlotHeader.Size + BlockSize;
            var expected = (2L * (SegmentFile.HeaderSize + (SlotsPerSegment * slotSize)))
                + ((SegmentFile.HeaderSize + ((count - Cached - (2 * SlotsPerSegment)) * (long)slotSize)) & ~(long)(Environment.SystemPageSize - 1));
            var deadline = DateTime.UtcNow + TimeSpan.FromSeconds(30);
            while (store.DroppedBytes < expected && DateTime.UtcNow < deadline)
            {
                await Task.Delay(10);
            }

            Assert.Equal(expected, store.DroppedBytes);

            // The two full segments are out of the page cache; so is the third up to the cached slots,
            // whose pages are all still there.
            Assert.Equal(0, ResidentPages(Segment(dir.Path, 0), 0, SegmentFile.HeaderSize + (SlotsPerSegment * slotSize)));
            Assert.Equal(0, ResidentPages(Segment(dir.Path, 1), 0, SegmentFile.HeaderSize + (SlotsPerSegment * slotSize)));
            var keepFrom = SegmentFile.HeaderSize + ((count - Cached - (2 * SlotsPerSegment)) * (long)slotSize);
            var keptEnd = SegmentFile.HeaderSize + ((count - (2 * SlotsPerSegment)) * (long)slotSize);
            var pageSize = Environment.SystemPageSize;
            var firstDropped = 0L;
            var firstKept = (keepFrom / pageSize) * pageSize;
            Assert.Equal(0, ResidentPages(Segment(dir.Path, 2), firstDropped, firstKept));
            Assert.Equal(PagesIn(firstKept, keptEnd), ResidentPages(Segment(dir.Path, 2), firstKept, keptEnd));

            // Dropped from the cache, not from the disk: every slot reads back.
            for (var a = 0; a < count; a++)
            {
                Assert.Equal(Block(a), await ReadAsync(unit, a));
            }
        }

        // And after a restart, whose recovery reads every segment.
        using var reopened = Open(dir.Path, Cached);
        for (var a = 0; a < count; a++)
        {
            Assert.Equal(Block(a), await ReadAsync(reopened, a));
        }
    }

    [Fact]
    public async Task ZeroCachedSlotsLeavesThePageCacheToTheKernel()
    {
        using var dir = new TempDirectory();
        using var unit = Open(dir.Path, cached: 0);
        for (var a = 0; a < SlotsPerSegment + 10; a++)
        {
            Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, a, Block(a))).Status);
        }

        Assert.Equal(0, StoreOf(unit).DroppedBytes);
    }

    [Fact]
    public void NegativeCachedSlotsAreRefused()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new LogUnitOptions { CachedSlots = -1 }.Validate());
        Assert.Contains("--page-cache-slots -1", LogUnitOptions.CachedSlotsError(-1), StringComparison.Ordinal);
        Assert.Null(LogUnitOptions.CachedSlotsError(0));
        Assert.Equal(1024, new LogUnitOptions().CachedSlots);
    }

    private static LogUnit Open(string directory, int cached) => LogUnit.Open(new LogUnitOptions
    {
        BlockSize = BlockSize,
        DataDirectory = directory,
        SlotsPerSegment = SlotsPerSegment,
        CachedSlots = cached,
    });

    private static FileSlotStore StoreOf(LogUnit unit) =>
        (FileSlotStore)typeof(LogUnit).GetField("_store", System.Reflection.BindingFlags.NonPublic | System.Reflection.BindingFlags.Instance)!.GetValue(unit)!;

    private static string Segment(string directory, long index) => Path.Combine(directory, SegmentFile.NameOf(index));

    private static byte[] Block(long address)
    {
        var block = new byte[BlockSize - 100];
        new Random((int)address).NextBytes(block);
        return block;
    }

    private static async Task<byte[]?> ReadAsync(LogUnit unit, long address)
    {
        var buffer = new byte[BlockSize];
        var reply = await unit.ReadAsync(0, address, buffer);
        return reply.Status == LogStatus.Ok ? buffer[..(int)reply.Value] : null;
    }

    private static int PagesIn(long from, long to) => (int)(((to + Environment.SystemPageSize - 1) / Environment.SystemPageSize) - (from / Environment.SystemPageSize));

    /// <summary>Pages of bytes [<paramref name="from"/>, <paramref name="to"/>) of a file in the page cache (<paramref name="from"/> page-aligned).</summary>
    private static int ResidentPages(string path, long from, long to)
    {
        using var file = MemoryMappedFile.CreateFromFile(path, FileMode.Open, null, 0, MemoryMappedFileAccess.Read);
        using var view = file.CreateViewAccessor(0, 0, MemoryMappedFileAccess.Read);
        var handle = view.SafeMemoryMappedViewHandle;
        var added = false;
        handle.DangerousAddRef(ref added);
        try
        {
            var pages = new byte[PagesIn(from, to)];
            var start = handle.DangerousGetHandle() + (nint)view.PointerOffset + (nint)from;
            Assert.Equal(0, Mincore(start, (nuint)(to - from), pages));
            return pages.Count(p => (p & 1) != 0);
        }
        finally
        {
            if (added)
            {
                handle.DangerousRelease();
            }
        }
    }

    [LibraryImport("libc", EntryPoint = "mincore", SetLastError = true)]
    private static partial int Mincore(nint address, nuint length, [Out] byte[] pages);
}
