using System.Buffers;
using Hyder.Log;
using Hyder.Log.Transport;
using Hyder.Server.Broadcast;
using Xunit;
using static Hyder.Server.Tests.Cluster;

namespace Hyder.Server.Tests;

public sealed class FrameTests
{
    private static string? Check(byte[] frame)
    {
        var sequence = new ReadOnlySequence<byte>(frame);
        return Frame.TryRead(ref sequence, 64 * 1024, out var header, out var payload, out var error) switch
        {
            FrameParse.Frame => BroadcastFrames.ValidateBlock(header, payload),
            FrameParse.Malformed => error,
            _ => "incomplete",
        };
    }

    [Fact]
    public void ABlockFrameRoundTrips()
    {
        var frame = RawPeer.BlockFrame(123_456_789, Block(3, 300));
        var sequence = new ReadOnlySequence<byte>(frame);
        Assert.Equal(FrameParse.Frame, Frame.TryRead(ref sequence, 1024, out var header, out var payload, out _));
        Assert.True(sequence.IsEmpty);
        Assert.Null(BroadcastFrames.ValidateBlock(header, payload));
        Assert.Equal(FrameOp.BroadcastBlock, header.Op);
        Assert.Equal(123_456_789, header.Address);
        Assert.Equal(Block(3, 300), payload.ToArray());
    }

    [Fact]
    public void EverySingleBitFlipInABlockFrameIsRejected()
    {
        var good = RawPeer.BlockFrame(77, Block(77, 100));
        for (var bit = 0; bit < good.Length * 8; bit++)
        {
            if (bit / 8 is >= 8 and < 12)
            {
                continue; // the request id is informational; nothing depends on it
            }

            var frame = (byte[])good.Clone();
            frame[bit / 8] ^= (byte)(1 << (bit % 8));
            Assert.NotNull(Check(frame));
        }
    }

    [Fact]
    public void AHelloRoundTripsAndADamagedOneIsRejected()
    {
        var hello = RawPeer.Hello(LogStatus.Ok, "cluster-é", "server-1");
        var sequence = new ReadOnlySequence<byte>(hello);
        Assert.Equal(FrameParse.Frame, Frame.TryRead(ref sequence, BroadcastFrames.MaxHelloPayload, out var header, out var payload, out _));
        Assert.Null(BroadcastFrames.ReadHello(header, payload, out var clusterId, out var serverId));
        Assert.Equal(("cluster-é", "server-1"), (clusterId, serverId));

        hello[^1] ^= 1;
        sequence = new ReadOnlySequence<byte>(hello);
        Frame.TryRead(ref sequence, BroadcastFrames.MaxHelloPayload, out header, out payload, out _);
        Assert.NotNull(BroadcastFrames.ReadHello(header, payload, out _, out _));
    }

    [Fact]
    public void OptionsOutOfRangeAreRejected()
    {
        Assert.Throws<ArgumentOutOfRangeException>(() => new BroadcastHub(new BroadcastOptions { ClusterId = "c", ServerId = "s", CacheCapacity = 0 }));
        Assert.Throws<ArgumentException>(() => new BroadcastHub(new BroadcastOptions { ClusterId = "", ServerId = "s" }));
        Assert.Throws<ArgumentException>(() => new BroadcastHub(new BroadcastOptions { ClusterId = new string('x', 256), ServerId = "s" }));
    }
}
