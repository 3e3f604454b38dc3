using System.Buffers.Binary;
using System.Diagnostics;
using System.Net;
using System.Net.Sockets;
using Hyder.Log;
using Xunit;
using Xunit.Abstractions;
using static Hyder.Server.Tests.Cluster;

namespace Hyder.Server.Tests;

public sealed class RobustnessTests(ITestOutputHelper output)
{
    [Fact]
    public async Task AFullSendQueueDropsInsteadOfBlockingThePublisher()
    {
        // A peer that completes the handshake and then never reads: the socket buffers fill, the
        // sender's flush stalls, and its queue of 4 frames fills.
        using var listener = new TcpListener(IPAddress.Loopback, 0);
        listener.Start();
        await using var a = await StartHub("a", queue: 4);
        a.AddPeer((IPEndPoint)listener.LocalEndpoint);
        await using var stalled = await RawPeer.AcceptHandshake(listener);
        await WaitUntil(() => a.ConnectedPeers == 1, "connected");

        const int Blocks = 3000; // 24 MiB, beyond what loopback socket buffers hold
        var block = Block(7);
        var clock = Stopwatch.StartNew();
        for (var position = 0L; position < Blocks; position++)
        {
            a.Publish(position, block);
        }

        output.WriteLine($"{Blocks} publishes to a stalled peer took {clock.Elapsed.TotalMilliseconds:F0} ms");
        var counters = a.Counters;
        output.WriteLine(counters.ToString());
        Assert.Equal(Blocks, counters.Published);
        Assert.True(counters.Dropped > 0, "a stalled peer must cost drops, not a blocked publisher");
        Assert.True(counters.Sent + counters.Dropped <= Blocks);
    }

    [Fact]
    public async Task ACorruptFrameClosesItsConnectionAndNothingFromItIsCached()
    {
        await using var b = await StartHub("b");

        await using (var raw = await RawPeer.Connect(b.LocalEndPoint))
        {
            Assert.Equal(LogStatus.Ok, await raw.Handshake());
            var damaged = RawPeer.BlockFrame(2, Block(2));
            damaged[32 + 100] ^= 0x10;
            await raw.Send([.. RawPeer.BlockFrame(1, Block(1)), .. damaged, .. RawPeer.BlockFrame(3, Block(3))]);
            Assert.True(await raw.ClosedByPeer());
        }

        await using (var raw = await RawPeer.Connect(b.LocalEndPoint))
        {
            Assert.Equal(LogStatus.Ok, await raw.Handshake());
            var misfiled = RawPeer.BlockFrame(4, Block(4));
            BinaryPrimitives.WriteInt64LittleEndian(misfiled.AsSpan(24), 5); // the position, not the block, is damaged
            await raw.Send(misfiled);
            Assert.True(await raw.ClosedByPeer());
        }

        await using (var raw = await RawPeer.Connect(b.LocalEndPoint))
        {
            await raw.Send("GET / HTTP/1.1\r\nHost: b\r\n\r\n................"u8.ToArray());
            Assert.True(await raw.ClosedByPeer());
        }

        await using (var raw = await RawPeer.Connect(b.LocalEndPoint))
        {
            Assert.Equal(LogStatus.Ok, await raw.Handshake());
            var huge = RawPeer.BlockFrame(6, Block(6));
            BinaryPrimitives.WriteUInt32LittleEndian(huge, int.MaxValue); // a length past the block limit
            await raw.Send(huge);
            Assert.True(await raw.ClosedByPeer());
        }

        await WaitUntil(() => b.Counters.CorruptFrames == 4, "four connections closed as corrupt");
        Assert.Equal(1, b.Counters.Received);
        Assert.Equal(1, b.CachedBlocks);
        Assert.Equal(Block(1), Take(b, 1));
        foreach (var position in new long[] { 2, 3, 4, 5, 6 })
        {
            Assert.Null(Take(b, position));
        }

        // The hub keeps serving honest peers.
        await using var a = await StartHub("a");
        await ConnectAll(a, b);
        a.Publish(8, Block(8));
        await WaitUntil(() => b.Counters.Received == 2, "an honest block after the corrupt ones");
        Assert.Equal(Block(8), Take(b, 8));
    }

    [Fact]
    public async Task AHelloNamingAnotherClusterIsAnsweredWithARefusal()
    {
        await using var b = await StartHub("b");
        await using var raw = await RawPeer.Connect(b.LocalEndPoint);
        Assert.Equal(LogStatus.Conflict, await raw.Handshake(clusterId: "other"));
        Assert.True(await raw.ClosedByPeer());
        Assert.Equal(1, b.Counters.Refused);
    }

    [Fact]
    public async Task PublishRejectsEmptyAndOversizedBlocksAndNegativePositions()
    {
        await using var a = await StartHub("a");
        Assert.Throws<ArgumentException>(() => a.Publish(1, ReadOnlyMemory<byte>.Empty));
        Assert.Throws<ArgumentException>(() => a.Publish(1, new byte[a.Options.MaxBlockSize + 1]));
        Assert.Throws<ArgumentOutOfRangeException>(() => a.Publish(-1, new byte[8]));
        Assert.Equal(0, a.Counters.Published);
    }
}
