using System.Buffers;
using Hyder.Server.Broadcast;
using Xunit;
using static Hyder.Server.Tests.Cluster;

namespace Hyder.Server.Tests;

public sealed class BlockCacheTests
{
    private static void Add(BlockCache cache, long position, int size = 64) =>
        cache.Add(position, new ReadOnlySequence<byte>(Block(position, size)));

    private static byte[]? TakeFrom(BlockCache cache, long position)
    {
        var writer = new ArrayBufferWriter<byte>();
        return cache.TryTake(position, writer) ? writer.WrittenSpan.ToArray() : null;
    }

    [Fact]
    public void EvictionKeepsTheHighestPositionsWithinCapacity()
    {
        using var cache = new BlockCache(8);
        for (var position = 0L; position < 100; position++)
        {
            Add(cache, position);
            Assert.True(cache.Count <= 8);
        }

        Assert.Equal(8, cache.Count);
        Assert.Equal(92, cache.Evicted);
        Assert.False(cache.Add(50, new ReadOnlySequence<byte>(Block(50, 64)))); // older than all it holds
        Assert.Equal(93, cache.Evicted);
        for (var position = 0L; position < 92; position++)
        {
            Assert.Null(TakeFrom(cache, position));
        }

        for (var position = 92L; position < 100; position++)
        {
            Assert.Equal(Block(position, 64), TakeFrom(cache, position));
        }

        Assert.Equal(0, cache.Count);
    }

    [Fact]
    public void TakesInterleavedWithArrivalsOutOfOrderNeverExceedCapacity()
    {
        using var cache = new BlockCache(16);
        var random = new Random(1234);
        var held = new SortedSet<long>();
        for (var i = 0; i < 20_000; i++)
        {
            var position = random.Next(0, 400);
            if (random.Next(3) == 0)
            {
                var taken = TakeFrom(cache, position);
                Assert.Equal(held.Remove(position), taken is not null);
                if (taken is not null)
                {
                    Assert.Equal(Block(position, 64), taken);
                }
            }
            else if (!held.Contains(position))
            {
                // The model: at capacity the lowest position goes (the newcomer, if it is the lowest).
                held.Add(position);
                if (held.Count > 16)
                {
                    held.Remove(held.Min);
                }

                Add(cache, position);
            }

            Assert.Equal(held.Count, cache.Count);
        }
    }

    [Fact]
    public void ADuplicateIsIgnoredAndTheFirstCopyKept()
    {
        using var cache = new BlockCache(8);
        Add(cache, 5);
        Assert.False(cache.Add(5, new ReadOnlySequence<byte>(new byte[] { 1, 2, 3 })));
        Assert.Equal(1, cache.Ignored);
        Assert.Equal(Block(5, 64), TakeFrom(cache, 5));
    }

    [Fact]
    public void DiscardBelowDropsPassedPositionsAndIgnoresLateArrivals()
    {
        using var cache = new BlockCache(32);
        for (var position = 0L; position < 10; position++)
        {
            Add(cache, position);
        }

        cache.DiscardBelow(5);
        Assert.Equal(5, cache.Count);
        Assert.Null(TakeFrom(cache, 4));
        Assert.Equal(Block(5, 64), TakeFrom(cache, 5));

        Add(cache, 3); // late: the reader has passed it
        Assert.Null(TakeFrom(cache, 3));
        Assert.Equal(1, cache.Ignored);

        cache.DiscardBelow(2); // a lower floor changes nothing
        Add(cache, 4);
        Assert.Null(TakeFrom(cache, 4));
        Assert.Equal(Block(9, 64), TakeFrom(cache, 9));
    }

    [Fact]
    public async Task AHubCacheStaysWithinItsCapacity()
    {
        await using var a = await StartHub("a");
        await using var b = await StartHub("b", cache: 16);
        await ConnectAll(a, b);
        for (var position = 0L; position < 200; position++)
        {
            a.Publish(position, Block(position));
        }

        await WaitUntil(() => b.Counters.Received == 200, "all received");
        Assert.Equal(16, b.CachedBlocks);
        Assert.Equal(184, b.Counters.Evicted);
        Assert.Null(Take(b, 183));
        Assert.Equal(Block(184), Take(b, 184));

        b.DiscardBelow(199);
        Assert.Equal(1, b.CachedBlocks);
        Assert.Equal(Block(199), Take(b, 199));
    }
}
