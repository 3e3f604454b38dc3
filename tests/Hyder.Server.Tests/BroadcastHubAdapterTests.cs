using Hyder.Server.Broadcast;
using Hyder.Server.Core;
using Xunit;
using static Hyder.Server.Tests.Cluster;

namespace Hyder.Server.Tests;

public sealed class BroadcastHubAdapterTests
{
    [Fact]
    public async Task AdapterDeliversPublishedBlocksToThePeerExactlyOnce()
    {
        await using var a = await StartHub("a");
        await using var b = await StartHub("b");
        await ConnectAll(a, b);
        IIntentionBroadcast sender = new BroadcastHubAdapter(a);
        IIntentionBroadcast receiver = new BroadcastHubAdapter(b);

        sender.Publish(7, Block(7, 300));
        sender.Publish(8, Block(8, 8192));
        await WaitUntil(() => b.Counters.Received == 2, "two blocks received");

        Assert.True(receiver.TryTake(8, out var eight));
        Assert.Equal(Block(8, 8192), eight);
        Assert.True(receiver.TryTake(7, out var seven));
        Assert.Equal(Block(7, 300), seven);
        Assert.False(receiver.TryTake(7, out var again));
        Assert.Empty(again);
    }

    [Fact]
    public async Task EveryArrivingBlockCallsTheReceiverAfterItCanBeTaken()
    {
        await using var a = await StartHub("a");
        await using var b = await StartHub("b");
        await ConnectAll(a, b);
        var sender = new BroadcastHubAdapter(a);
        IIntentionBroadcast receiver = new BroadcastHubAdapter(b);
        var calls = 0;
        var takeable = 0;
        receiver.OnReceived(() =>
        {
            // Called after the cache holds the block: a woken reader finds it.
            if (b.CachedBlocks > 0)
            {
                Interlocked.Increment(ref takeable);
            }

            Interlocked.Increment(ref calls);
        });

        for (var p = 1; p <= 5; p++)
        {
            sender.Publish(p, Block(p, 256));
        }

        await WaitUntil(() => Volatile.Read(ref calls) == 5, "five calls");
        Assert.Equal(5, b.Counters.Received);
        Assert.Equal(5, Volatile.Read(ref takeable));
        Assert.True(receiver.TryTake(5, out var five));
        Assert.Equal(Block(5, 256), five);
    }

    [Fact]
    public async Task DiscardBelowDropsCachedBlocksAndPublishAfterDisposeIsIgnored()
    {
        await using var a = await StartHub("a");
        await using var b = await StartHub("b");
        await ConnectAll(a, b);
        var sender = new BroadcastHubAdapter(a);
        var receiver = new BroadcastHubAdapter(b);
        sender.Publish(1, Block(1, 512));
        sender.Publish(2, Block(2, 512));
        await WaitUntil(() => b.Counters.Received == 2, "two blocks received");

        receiver.DiscardBelow(2);
        Assert.False(receiver.TryTake(1, out _));
        Assert.True(receiver.TryTake(2, out var two));
        Assert.Equal(Block(2, 512), two);

        await a.DisposeAsync();
        sender.Publish(3, Block(3, 512));
    }
}
