using Hyder.Server.Broadcast;
using Xunit;
using static Hyder.Server.Tests.Cluster;

namespace Hyder.Server.Tests;

public sealed class ExchangeTests
{
    [Fact]
    public async Task TwoHubsReceiveExactlyEachOthersBlocksWithIdenticalBytes()
    {
        await using var a = await StartHub("a");
        await using var b = await StartHub("b");
        await ConnectAll(a, b);

        // a owns the even positions, b the odd ones, as two servers appending to one log would.
        for (var position = 0L; position < 200; position++)
        {
            (position % 2 == 0 ? a : b).Publish(position, Block(position));
        }

        await WaitUntil(() => a.Counters.Received == 100 && b.Counters.Received == 100, "100 blocks each way");
        for (var position = 0L; position < 200; position++)
        {
            var (owner, peer) = position % 2 == 0 ? (a, b) : (b, a);
            Assert.Null(Take(owner, position));
            Assert.Equal(Block(position), Take(peer, position));
        }

        Assert.Equal(0, a.CachedBlocks);
        Assert.Equal(0, b.CachedBlocks);
        Assert.Equal(new BroadcastCounters(
            Published: 100, Sent: 100, Dropped: 0, Received: 100, Hits: 100, Misses: 100, CorruptFrames: 0,
            Connections: 1, Reconnects: 0, Refused: 0, Ignored: 0, Evicted: 0, TimedOut: 0), a.Counters);
    }

    [Fact]
    public async Task ThreeHubsEachReceiveExactlyTheOthersBlocks()
    {
        await using var h0 = await StartHub("s0");
        await using var h1 = await StartHub("s1");
        await using var h2 = await StartHub("s2");
        BroadcastHub[] hubs = [h0, h1, h2];
        await ConnectAll(hubs);

        const int Blocks = 300;
        for (var position = 0L; position < Blocks; position++)
        {
            hubs[position % 3].Publish(position, Block(position, 1000 + (int)(position % 7000)));
        }

        await WaitUntil(() => hubs.All(h => h.Counters.Received == 2 * Blocks / 3), "each hub hears 200 blocks");
        for (var i = 0; i < 3; i++)
        {
            Assert.Equal(2 * Blocks / 3, hubs[i].CachedBlocks);
            for (var position = 0L; position < Blocks; position++)
            {
                var taken = Take(hubs[i], position);
                if (position % 3 == i)
                {
                    Assert.Null(taken);
                }
                else
                {
                    Assert.Equal(Block(position, 1000 + (int)(position % 7000)), taken);
                }
            }

            Assert.Equal(2 * Blocks / 3, hubs[i].Counters.Sent); // each of its 100 blocks to two peers
        }
    }

    [Fact]
    public async Task SeveralThreadsPublishingAtOnceDeliverEveryBlockOnce()
    {
        const int Threads = 4;
        const int PerThread = 250;
        await using var a = await StartHub("a", queue: Threads * PerThread);
        await using var b = await StartHub("b", cache: Threads * PerThread);
        await ConnectAll(a, b);

        using var start = new Barrier(Threads);
        var publishers = Enumerable.Range(0, Threads).Select(t => Task.Factory.StartNew(
            () =>
            {
                start.SignalAndWait();
                for (var i = 0; i < PerThread; i++)
                {
                    var position = ((long)i * Threads) + t;
                    a.Publish(position, Block(position, 4096));
                }
            },
            TaskCreationOptions.LongRunning)).ToArray();
        await Task.WhenAll(publishers);

        await WaitUntil(() => b.Counters.Received == Threads * PerThread, "every block received");
        for (var position = 0L; position < Threads * PerThread; position++)
        {
            Assert.Equal(Block(position, 4096), Take(b, position));
        }

        var counters = a.Counters;
        Assert.Equal(Threads * PerThread, counters.Published);
        Assert.Equal(Threads * PerThread, counters.Sent);
        Assert.Equal(0, counters.Dropped);
        Assert.Equal(0, b.Counters.Ignored);
    }
}
