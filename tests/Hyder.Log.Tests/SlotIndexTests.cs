using Hyder.Log.Storage;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>The unit's paged index of addresses against a dictionary, and what it costs per address.</summary>
public sealed class SlotIndexTests
{
    /// <summary>Random sets, lookups and prefix trims over a few pages agree with a dictionary after every step.</summary>
    [Theory]
    [InlineData(1)]
    [InlineData(2)]
    [InlineData(3)]
    public void RandomOperationsAgreeWithADictionary(int seed)
    {
        var rng = new Random(seed);
        var index = new SlotIndex();
        var model = new Dictionary<long, IndexEntry>();
        long trimmedBelow = 0;
        for (var step = 0; step < 20_000; step++)
        {
            var address = trimmedBelow + rng.Next(5 * 4096);
            switch (rng.Next(20))
            {
                case 0:
                    var before = trimmedBelow + rng.Next(2 * 4096);
                    index.RemoveBelow(before);
                    foreach (var a in model.Keys.Where(a => a < before).ToList())
                    {
                        model.Remove(a);
                    }

                    trimmedBelow = Math.Max(trimmedBelow, before);
                    break;
                case < 10:
                    var entry = new IndexEntry(rng.NextInt64(0, 1L << 40), (SlotKind)rng.Next(4));
                    index.Set(address, entry);
                    model[address] = entry;
                    break;
                default:
                    Assert.Equal(model.TryGetValue(address, out var expected), index.TryGetValue(address, out var actual));
                    Assert.Equal(expected, actual);
                    break;
            }

            Assert.Equal(model.Count, index.Count);
        }

        foreach (var (address, entry) in model)
        {
            Assert.True(index.TryGetValue(address, out var actual));
            Assert.Equal(entry, actual);
        }
    }

    [Fact]
    public void EdgesOfTheEncodingRoundTrip()
    {
        var index = new SlotIndex();
        index.Set(0, new IndexEntry(0, SlotKind.Corrupt));
        index.Set(LogAddress.Max, new IndexEntry((1L << 61) - 1, SlotKind.Trim));
        Assert.True(index.TryGetValue(0, out var first));
        Assert.Equal(new IndexEntry(0, SlotKind.Corrupt), first);
        Assert.True(index.TryGetValue(LogAddress.Max, out var last));
        Assert.Equal(new IndexEntry((1L << 61) - 1, SlotKind.Trim), last);
        Assert.False(index.TryGetValue(1, out _));
        Assert.False(index.TryGetValue(-1, out _));
        Assert.Throws<ArgumentOutOfRangeException>(() => index.Set(2, new IndexEntry(1L << 61, SlotKind.Data)));
        Assert.Throws<ArgumentOutOfRangeException>(() => index.Set(-1, new IndexEntry(0, SlotKind.Data)));
        Assert.Equal(2, index.Count);
    }

    /// <summary>
    /// The point of the index: a unit that holds every address of its range pays 8 bytes per
    /// address, and a prefix trim gives whole pages back.
    /// </summary>
    [Fact]
    public void AUnitHoldingEveryAddressPaysEightBytesPerAddressAndATrimGivesPagesBack()
    {
        var index = new SlotIndex();
        const int addresses = 100_000;
        for (long a = 0; a < addresses; a++)
        {
            index.Set(a, new IndexEntry(a, SlotKind.Data));
        }

        Assert.Equal(addresses, index.Count);
        var bytesPerAddress = index.Pages * 4096.0 * sizeof(long) / addresses;
        Assert.InRange(bytesPerAddress, 8.0, 8.4);

        index.RemoveBelow(90_000);
        Assert.Equal(10_000, index.Count);
        Assert.Equal(4, index.Pages); // pages 21-24 (addresses 86,016-102,399) stay: 90,000 lies in page 21
        Assert.False(index.TryGetValue(89_999, out _));
        Assert.True(index.TryGetValue(90_000, out var kept));
        Assert.Equal(new IndexEntry(90_000, SlotKind.Data), kept);
    }

    /// <summary>The unit over it: write-once and trims behave as before.</summary>
    [Fact]
    public async Task AUnitAnswersAsBeforeAcrossPagesAndAPrefixTrim()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 64 });
        for (long a = 0; a < 10_000; a += 3)
        {
            Assert.Equal(LogStatus.Ok, (await unit.WriteAsync(0, a, new[] { (byte)a })).Status);
        }

        Assert.Equal(LogStatus.Written, (await unit.WriteAsync(0, 9_999, new byte[] { 1 })).Status);
        Assert.Equal(LogStatus.Unwritten, (await unit.ReadAsync(0, 9_998, new byte[64])).Status);
        Assert.Equal(LogStatus.Ok, (await unit.PrefixTrimAsync(0, 5_000)).Status);
        Assert.Equal(LogStatus.Trimmed, (await unit.ReadAsync(0, 4_998, new byte[64])).Status);
        var buffer = new byte[64];
        Assert.Equal(new UnitReply(LogStatus.Ok, 1), await unit.ReadAsync(0, 5_001, buffer));
        Assert.Equal(unchecked((byte)5_001), buffer[0]);
    }
}
