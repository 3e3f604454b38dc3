using Google.Protobuf;
using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>Our client against our server over real loopback sockets: every call kind, big messages, metadata, statuses.</summary>
public sealed class RoundTripTests
{
    private static readonly TimeSpan s_timeout = TimeSpan.FromSeconds(10);

    private static CallOptions Options(Metadata? headers = null) => new(headers, DateTime.UtcNow + s_timeout);

    [Fact]
    public async Task UnaryCallReturnsTheResponse()
    {
        await using var t = await TestServer.StartAsync();
        using var call = t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "hello", Payload = ByteString.CopyFrom(1, 2, 3) }, Options());
        var reply = await call;
        Assert.Equal("hello", reply.Text);
        Assert.Equal([1, 2, 3], reply.Payload.ToByteArray());
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task ServerStreamingCallDeliversEveryMessageInOrder()
    {
        await using var t = await TestServer.StartAsync();
        using var call = t.Channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Text = "n", Count = 100 }, Options());
        var indexes = new List<int>();
        await foreach (var reply in call.ResponseStream.ReadAllAsync())
        {
            indexes.Add(reply.Index);
        }

        Assert.Equal(Enumerable.Range(0, 100), indexes);
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task ServerStreamingCallWithNoMessagesEndsOk()
    {
        await using var t = await TestServer.StartAsync();
        using var call = t.Channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Count = 0 }, Options());
        Assert.False(await call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task ClientStreamingCallSeesEveryRequest()
    {
        await using var t = await TestServer.StartAsync();
        using var call = t.Channel.ClientStreamingCall(EchoMethods.Collect, Options());
        foreach (var text in new[] { "a", "b", "c" })
        {
            await call.RequestStream.WriteAsync(new EchoRequest { Text = text, Payload = ByteString.CopyFrom(new byte[10]) });
        }

        await call.RequestStream.CompleteAsync();
        var reply = await call;
        Assert.Equal("a,b,c", reply.Text);
        Assert.Equal(3, reply.Index);
        Assert.Equal("30", reply.Payload.ToStringUtf8());
    }

    [Fact]
    public async Task DuplexCallRepliesToEachRequestBeforeTheNextIsSent()
    {
        await using var t = await TestServer.StartAsync();
        await EchoScenarios.ChatInterleavedAsync(t.Channel, 20, Options());
    }

    [Fact]
    public async Task StreamingCallReachesTheServerBeforeItsFirstRequest()
    {
        // The server answers an unknown method without waiting for a request. The first call rides
        // on the new connection's setup; the second must reach the server by itself.
        await using var t = await TestServer.StartAsync();
        var missing = new Method<EchoRequest, EchoReply>(MethodType.DuplexStreaming, EchoMethods.Service, "Missing", EchoRequest.Parser, EchoReply.Parser);
        for (var i = 0; i < 2; i++)
        {
            using var call = t.Channel.DuplexStreamingCall(missing, new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(5)));
            var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
            Assert.Equal(StatusCode.Unimplemented, e.StatusCode);
        }
    }

    [Fact]
    public async Task MessagesOfSeveralMegabytesRoundTripInEveryDirection()
    {
        const int size = 3 * 1024 * 1024;
        await using var t = await TestServer.StartAsync();
        var payload = new byte[size];
        new Random(42).NextBytes(payload);
        var big = ByteString.CopyFrom(payload);

        var reply = await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = big }, Options());
        Assert.Equal(big, reply.Payload);

        using var stream = t.Channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Payload = big, Count = 3 }, Options());
        var count = 0;
        await foreach (var r in stream.ResponseStream.ReadAllAsync())
        {
            Assert.Equal(big, r.Payload);
            count++;
        }

        Assert.Equal(3, count);
    }

    [Fact]
    public async Task RequestOverTheServersLimitFailsWithResourceExhausted()
    {
        await using var t = await TestServer.StartAsync(o => o.MaxReceiveMessageSize = 1000);
        var ok = await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = ByteString.CopyFrom(new byte[900]) }, Options());
        Assert.Equal(900, ok.Payload.Length);

        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = ByteString.CopyFrom(new byte[2000]) }, Options()));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
        Assert.Contains("maximum", e.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ResponseOverTheClientsLimitFailsWithResourceExhausted()
    {
        await using var t = await TestServer.StartAsync(channelOptions: new RpcChannelOptions { MaxReceiveMessageSize = 1000 });
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = ByteString.CopyFrom(new byte[2000]) }, Options()));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
    }

    [Fact]
    public async Task ResponseOverTheServersSendLimitFailsWithResourceExhausted()
    {
        await using var t = await TestServer.StartAsync(o => o.MaxSendMessageSize = 1000);
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = ByteString.CopyFrom(new byte[2000]) }, Options()));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
    }

    [Fact]
    public async Task HandlerStatusAndPercentEncodedMessageReachTheClient()
    {
        const string detail = "no such key: ключ 100% ✓\n";
        await using var t = await TestServer.StartAsync();
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { FailCode = (int)StatusCode.NotFound, FailMessage = detail }, Options()));
        Assert.Equal(StatusCode.NotFound, e.StatusCode);
        Assert.Equal(detail, e.Status.Detail);
        Assert.Equal("yes", e.Trailers.GetValue("x-fail"));
    }

    [Fact]
    public async Task StatusAfterStreamedMessagesComesInTheTrailers()
    {
        await using var t = await TestServer.StartAsync();
        using var call = t.Channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Count = 2, FailCode = (int)StatusCode.Aborted, FailMessage = "conflict" }, Options());
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.True(await call.ResponseStream.MoveNext());
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
        Assert.Equal(new Status(StatusCode.Aborted, "conflict"), e.Status);
        Assert.Equal(e.Status, call.GetStatus());
        Assert.Equal("yes", call.GetTrailers().GetValue("x-fail"));
    }

    [Fact]
    public async Task UnknownMethodFailsWithUnimplemented()
    {
        await using var t = await TestServer.StartAsync();
        var missing = new Method<EchoRequest, EchoReply>(MethodType.Unary, EchoMethods.Service, "Missing", EchoRequest.Parser, EchoReply.Parser);
        var e = await Assert.ThrowsAsync<RpcException>(async () => await t.Channel.UnaryCall(missing, new EchoRequest(), Options()));
        Assert.Equal(StatusCode.Unimplemented, e.StatusCode);
        Assert.Contains("/hyder.rpc.test.Echo/Missing", e.Status.Detail, StringComparison.Ordinal);
    }

    [Fact]
    public async Task MetadataTravelsBothWaysIncludingBinaryValues()
    {
        await using var t = await TestServer.StartAsync();
        byte[] binary = [0, 1, 2, 250, 255];
        var headers = new Metadata { { "x-echo", "hello metadata" }, { "x-echo-bin", binary } };
        using var call = t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "m" }, Options(headers));
        var responseHeaders = await call.ResponseHeadersAsync;
        Assert.Equal("hello metadata", responseHeaders.GetValue("x-echo"));
        Assert.Equal(binary, responseHeaders.GetValueBytes("x-echo-bin"));
        await call;
        var trailers = call.GetTrailers();
        Assert.Equal("hello metadata", trailers.GetValue("x-echo-trailer"));
        Assert.Equal(binary, trailers.GetValueBytes("x-echo-trailer-bin"));
    }

    [Fact]
    public async Task ManyConcurrentCallsShareOneChannel()
    {
        await using var t = await TestServer.StartAsync();
        var calls = Enumerable.Range(0, 200).Select(async i =>
        {
            var reply = await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = $"c{i}" }, Options());
            return reply.Text;
        });
        var texts = await Task.WhenAll(calls);
        Assert.Equal(Enumerable.Range(0, 200).Select(i => $"c{i}"), texts);
    }

    [Fact]
    public async Task ResponseHeadersAreSentWhenTheHandlerWritesThem()
    {
        // Wait with "headers" sends its headers, then waits for its token: the headers must not wait
        // for a message or the status. Called as server streaming (the same bytes on the wire), whose
        // headers the client hands over as they arrive.
        await using var t = await TestServer.StartAsync();
        var waitAsStream = new Method<EchoRequest, EchoReply>(MethodType.ServerStreaming, EchoMethods.Service, "Wait", EchoRequest.Parser, EchoReply.Parser);
        using var call = t.Channel.ServerStreamingCall(waitAsStream, new EchoRequest { Text = "headers" }, new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(30)));
        await call.ResponseHeadersAsync.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.False(t.Service.WaitCancelledAt.Task.IsCompleted);
    }
}
