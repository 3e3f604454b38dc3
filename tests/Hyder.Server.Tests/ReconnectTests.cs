using Xunit;
using static Hyder.Server.Tests.Cluster;

namespace Hyder.Server.Tests;

public sealed class ReconnectTests
{
    [Fact]
    public async Task APeerThatStartsLateGetsTheBlocksPublishedAfterItConnects()
    {
        var lateAddress = FreeEndPoint();
        await using var a = await StartHub("a");
        a.AddPeer(lateAddress);
        a.Publish(1, Block(1));
        Assert.Equal(0, a.ConnectedPeers);

        await using var late = await StartHub("late", listen: lateAddress);
        await WaitUntil(() => a.ConnectedPeers == 1, "a connects to the late peer");
        a.Publish(2, Block(2));
        await WaitUntil(() => late.Counters.Received == 1, "the late peer receives");

        Assert.Null(Take(late, 1));
        Assert.Equal(Block(2), Take(late, 2));
        Assert.Equal(0, a.Counters.Dropped); // nobody was connected: nothing queued, nothing dropped
    }

    [Fact]
    public async Task APeerThatRestartsGetsLaterBlocksAfterTheReconnect()
    {
        // b comes back on its old port, which a keeps reconnecting to: a reserved port, never one
        // of the ephemeral range, where a's own reconnect could be given it as its source port.
        await using var a = await StartHub("a");
        var address = FreeEndPoint();
        var b = await StartHub("b", listen: address);
        a.AddPeer(address);
        await WaitUntil(() => a.ConnectedPeers == 1, "connected");
        a.Publish(1, Block(1));
        await WaitUntil(() => b.Counters.Received == 1, "first block");

        await b.DisposeAsync();
        await WaitUntil(() => a.ConnectedPeers == 0, "a notices b is gone");
        a.Publish(2, Block(2)); // lost for b; its reader would read the log

        await using var restarted = await StartHub("b", listen: address);
        await WaitUntil(() => a.ConnectedPeers == 1, "a reconnects");
        a.Publish(3, Block(3));
        await WaitUntil(() => restarted.Counters.Received == 1, "block after restart");

        Assert.Null(Take(restarted, 2));
        Assert.Equal(Block(3), Take(restarted, 3));
        Assert.Equal(2, a.Counters.Connections);
        Assert.Equal(1, a.Counters.Reconnects);
    }

    [Fact]
    public async Task APeerOfAnotherClusterIsRefused()
    {
        await using var a = await StartHub("a", clusterId: "blue");
        await using var b = await StartHub("b", clusterId: "green");
        a.AddPeer(b.LocalEndPoint);
        b.AddPeer(a.LocalEndPoint);

        await WaitUntil(() => a.Counters.Refused >= 2 && b.Counters.Refused >= 2, "both sides refuse");
        a.Publish(1, Block(1));
        b.Publish(2, Block(2));

        Assert.Equal(0, a.ConnectedPeers);
        Assert.Equal(0, b.ConnectedPeers);
        Assert.Equal(0, a.Counters.Connections);
        Assert.Equal(0, a.Counters.Received + b.Counters.Received);
        Assert.Equal(0, a.CachedBlocks + b.CachedBlocks);
    }

    [Fact]
    public async Task AHubListedAsItsOwnPeerIsRefused()
    {
        await using var a = await StartHub("a");
        a.AddPeer(a.LocalEndPoint);
        await WaitUntil(() => a.Counters.Refused >= 2, "self-connection refused");
        Assert.Equal(0, a.ConnectedPeers);
    }
}
