using System.Buffers.Binary;
using System.Net;
using System.Net.Sockets;
using Hyder.Log.Client;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

public sealed class TransportTests
{
    private static LogServer Serve(LogUnit unit, Sequencer? sequencer = null)
    {
        var server = new LogServer(new IPEndPoint(IPAddress.Loopback, 0), unit, sequencer);
        server.Start();
        return server;
    }

    [Fact]
    public async Task RemoteUnitAnswersLikeALocalOne()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 1024 });
        await using var server = Serve(unit, new Sequencer());
        await using var connector = new TcpConnector(1024);
        var remote = connector.Unit(server.LocalEndPoint.ToString());
        var block = Enumerable.Range(0, 1000).Select(i => (byte)i).ToArray();
        Assert.Equal(LogStatus.Ok, (await remote.WriteAsync(1, 5, block)).Status);
        Assert.Equal(LogStatus.Written, (await remote.WriteAsync(1, 5, block)).Status);
        var buffer = new byte[1024];
        Assert.Equal(new UnitReply(LogStatus.Ok, 1000), await remote.ReadAsync(1, 5, buffer));
        Assert.Equal(block, buffer[..1000]);
        Assert.Equal(LogStatus.Ok, (await remote.FillAsync(1, 6)).Status);
        Assert.Equal(LogStatus.Filled, (await remote.ReadAsync(1, 6, buffer)).Status);
        Assert.Equal(LogStatus.Unwritten, (await remote.ReadAsync(1, 7, buffer)).Status);
        Assert.Equal(LogStatus.WrongBlockSize, (await remote.WriteAsync(1, 8, new byte[1025])).Status);
        Assert.Equal(LogStatus.OutOfRange, (await remote.WriteAsync(1, -3, block)).Status);
        Assert.Equal(new UnitReply(LogStatus.Ok, 6), await remote.SealAsync(2));
        Assert.Equal(new UnitReply(LogStatus.StaleEpoch, 2), await remote.WriteAsync(1, 9, block));

        var sequencer = connector.Sequencer(server.LocalEndPoint.ToString());
        Assert.Equal(LogStatus.NotReady, (await sequencer.NextAsync(1, 1)).Status);
        Assert.Equal(LogStatus.Ok, (await sequencer.ResetAsync(2, 7)).Status);
        Assert.Equal(new TokenReplyShape(LogStatus.Ok, 2, 7), Shape(await sequencer.NextAsync(2, 10)));
        Assert.Equal(new TokenReplyShape(LogStatus.StaleEpoch, 2, 17), Shape(await sequencer.NextAsync(1, 1)));
    }

    private readonly record struct TokenReplyShape(LogStatus Status, long Epoch, long Address);

    private static TokenReplyShape Shape(TokenReply reply) => new(reply.Status, reply.Epoch, reply.Address);

    [Fact]
    public async Task PipelinedRequestsOnOneConnectionAllComplete()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        await using var server = Serve(unit);
        await using var connector = new TcpConnector(256);
        var remote = connector.Unit(server.LocalEndPoint.ToString());
        var writes = Enumerable.Range(0, 3000).Select(a => remote.WriteAsync(0, a, BitConverter.GetBytes(a)).AsTask()).ToArray();
        Assert.All(await Task.WhenAll(writes), r => Assert.Equal(LogStatus.Ok, r.Status));
        var reads = Enumerable.Range(0, 3000).Select(async a =>
        {
            var buffer = new byte[256];
            var reply = await remote.ReadAsync(0, a, buffer);
            return reply.Status == LogStatus.Ok && BitConverter.ToInt32(buffer) == a;
        });
        Assert.All(await Task.WhenAll(reads), Assert.True);
        Assert.Equal(1, server.OpenConnections);
    }

    [Theory]
    [InlineData("bad version")]
    [InlineData("oversized")]
    [InlineData("short length")]
    [InlineData("unknown op")]
    [InlineData("payload on a read")]
    [InlineData("truncated")]
    public async Task MalformedFrameClosesOnlyThatConnection(string fault)
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        await using var server = Serve(unit);
        await using var connector = new TcpConnector(256);
        var good = connector.Unit(server.LocalEndPoint.ToString());
        Assert.Equal(LogStatus.Ok, (await good.WriteAsync(0, 0, new byte[] { 1 })).Status);

        using var bad = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await bad.ConnectAsync(server.LocalEndPoint);
        var frame = new byte[32 + 8];
        BinaryPrimitives.WriteUInt32LittleEndian(frame, 28);
        frame[4] = 2;
        frame[6] = 1;
        switch (fault)
        {
            case "bad version": frame[6] = 9; break;
            case "oversized": BinaryPrimitives.WriteUInt32LittleEndian(frame, 100_000_000); break;
            case "short length": BinaryPrimitives.WriteUInt32LittleEndian(frame, 3); break;
            case "unknown op": frame[4] = 99; break;
            case "payload on a read": BinaryPrimitives.WriteUInt32LittleEndian(frame, 36); break;
            case "truncated": frame = frame[..20]; break;
        }

        await bad.SendAsync(frame);
        if (fault == "truncated")
        {
            bad.Shutdown(SocketShutdown.Send);
        }

        var received = await bad.ReceiveAsync(new byte[64]).WaitAsync(TimeSpan.FromSeconds(10));
        Assert.Equal(0, received);
        Assert.Equal(LogStatus.Ok, (await good.WriteAsync(0, 1, new byte[] { 2 })).Status);
        var buffer = new byte[256];
        Assert.Equal(new UnitReply(LogStatus.Ok, 1), await good.ReadAsync(0, 1, buffer));
    }

    [Fact]
    public async Task CallsInFlightFailAsUnreachableWhenTheServerGoesAway()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        var server = Serve(unit);
        await using var connector = new TcpConnector(256);
        var remote = connector.Unit(server.LocalEndPoint.ToString());
        Assert.Equal(LogStatus.Ok, (await remote.WriteAsync(0, 0, new byte[] { 1 })).Status);
        await server.DisposeAsync();
        await Assert.ThrowsAsync<UnitUnreachableException>(async () => await remote.WriteAsync(0, 1, new byte[] { 1 }));
    }

    [Fact]
    public async Task ServerThatStopsAnsweringFailsCallsAfterTheRequestTimeout()
    {
        // Accepts connections and reads nothing: a stopped process or a hung disk looks like this.
        using var silent = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        silent.Bind(new IPEndPoint(IPAddress.Loopback, 0));
        silent.Listen();
        var accepted = silent.AcceptAsync();
        await using var connector = new TcpConnector(256, requestTimeout: TimeSpan.FromMilliseconds(400));
        var remote = connector.Unit(silent.LocalEndPoint!.ToString()!);
        var started = DateTime.UtcNow;
        await Assert.ThrowsAsync<UnitUnreachableException>(async () => await remote.WriteAsync(0, 1, new byte[] { 1 }));
        Assert.InRange(DateTime.UtcNow - started, TimeSpan.FromMilliseconds(300), TimeSpan.FromSeconds(5));
        (await accepted).Dispose();
    }
}
