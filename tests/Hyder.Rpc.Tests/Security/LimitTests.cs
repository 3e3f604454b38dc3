using System.Diagnostics;
using System.Net;
using System.Net.Http.Headers;
using Google.Protobuf;
using Xunit;

namespace Hyder.Rpc.Tests.Security;

/// <summary>One bad client (too big, too slow, too many connections) is cut off while the others carry on.</summary>
public sealed class LimitTests
{
    [Fact]
    public async Task AnOversizedRequestIsRefusedBeforeItIsReadAndTheConnectionStaysUsable()
    {
        await using var t = await TestServer.StartAsync(o => o.MaxReceiveMessageSize = 64 * 1024);
        var huge = new EchoRequest { Payload = ByteString.CopyFrom(new byte[1024 * 1024]) };
        var e = await Assert.ThrowsAsync<RpcException>(async () => await t.Channel.UnaryCall(EchoMethods.Unary, huge));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
        Assert.Contains("exceeds the maximum configured message size", e.Status.Detail, StringComparison.Ordinal);

        // The same channel (and connection) and a fresh one both go on working.
        Assert.Equal("after", (await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "after" })).Text);
        using var other = new RpcChannel(t.Server.Address);
        Assert.Equal("other", (await other.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "other" })).Text);
    }

    [Theory]
    [InlineData(0)] // headers, then nothing
    [InlineData(3)] // headers and part of a message prefix, then nothing
    [InlineData(9)] // a whole prefix and part of the message
    public async Task ASlowUnaryRequestIsCutOffWhileOtherCallsSucceed(int sent)
    {
        await using var t = await TestServer.StartAsync(o => o.Limits.RequestTimeout = TimeSpan.FromSeconds(1));
        var frame = RawGrpc.Frame(new EchoRequest { Text = "a message longer than nine bytes" });
        using var hold = new CancellationTokenSource();
        using var http = RawGrpc.CreateClient();
        var watch = Stopwatch.StartNew();
        var slow = SendAsync(http, t.Server.Address, EchoMethods.Unary.FullName, new TrickleContent(frame[..sent], hold.Token));

        // Meanwhile another client's calls succeed.
        for (var i = 0; i < 5; i++)
        {
            Assert.Equal("fine", (await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "fine" })).Text);
        }

        var (status, message) = await slow.WaitAsync(TimeSpan.FromSeconds(20));
        await hold.CancelAsync();
        Assert.Equal(((int)StatusCode.DeadlineExceeded).ToString(System.Globalization.CultureInfo.InvariantCulture), status);
        Assert.Contains("request timeout", message, StringComparison.Ordinal);
        Assert.InRange(watch.Elapsed, TimeSpan.FromSeconds(0.9), TimeSpan.FromSeconds(15));
    }

    [Fact]
    public async Task AStreamingCallMayPauseBetweenMessagesButNotInsideOne()
    {
        await using var t = await TestServer.StartAsync(o => o.Limits.RequestTimeout = TimeSpan.FromSeconds(1));
        using (var chat = t.Channel.DuplexStreamingCall(EchoMethods.Chat))
        {
            await chat.RequestStream.WriteAsync(new EchoRequest { Text = "one" });
            Assert.True(await chat.ResponseStream.MoveNext());
            await Task.Delay(TimeSpan.FromSeconds(1.5)); // longer than the request timeout, between messages
            await chat.RequestStream.WriteAsync(new EchoRequest { Text = "two" });
            Assert.True(await chat.ResponseStream.MoveNext());
            Assert.Equal("two", chat.ResponseStream.Current.Text);
            await chat.RequestStream.CompleteAsync();
            Assert.False(await chat.ResponseStream.MoveNext());
        }

        var frame = RawGrpc.Frame(new EchoRequest { Text = "a message cut in the middle" });
        using var hold = new CancellationTokenSource();
        using var http = RawGrpc.CreateClient();
        var (status, _) = await SendAsync(http, t.Server.Address, EchoMethods.Chat.FullName, new TrickleContent(frame[..10], hold.Token)).WaitAsync(TimeSpan.FromSeconds(20));
        await hold.CancelAsync();
        Assert.Equal("4", status);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ConnectionsPastTheCapAreRefusedWhileOpenOnesWork(bool perAddress)
    {
        await using var t = await TestServer.StartAsync(o =>
        {
            o.Limits.MaxConnections = perAddress ? null : 2;
            o.Limits.MaxConnectionsPerAddress = perAddress ? 2 : null;
        });
        using var first = new RpcChannel(t.Server.Address);
        using var second = new RpcChannel(t.Server.Address);
        Assert.Equal("1", (await first.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "1" })).Text);
        Assert.Equal("2", (await second.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "2" })).Text);

        using (var third = new RpcChannel(t.Server.Address))
        {
            var e = await Assert.ThrowsAsync<RpcException>(async () => await third.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "3" }));
            Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        }

        Assert.Equal("1 again", (await first.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "1 again" })).Text);
        Assert.Equal("2 again", (await second.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "2 again" })).Text);

        // A closed connection frees its place.
        first.Dispose();
        using var fourth = new RpcChannel(t.Server.Address);
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                Assert.Equal("4", (await fourth.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "4" })).Text);
                break;
            }
            catch (RpcException e) when (e.StatusCode == StatusCode.Unavailable && attempt < 200)
            {
                await Task.Delay(100); // the server sees the close a moment later
            }
        }
    }

    [Fact]
    public async Task OversizedHeadersFailTheCallAndOtherCallsSucceed()
    {
        await using var t = await TestServer.StartAsync(o => o.Limits.MaxHeaderBytes = 4096);
        using var bloated = new RpcChannel(t.Server.Address);
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await bloated.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }, new CallOptions(Headers: new Metadata { { "x-padding", new string('p', 8192) } })));
        Assert.NotEqual(StatusCode.OK, e.StatusCode);
        Assert.Equal("fine", (await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "fine" })).Text);
    }

    private static async Task<(string? Status, string Message)> SendAsync(HttpClient http, Uri server, string path, HttpContent content)
    {
        content.Headers.ContentType = new MediaTypeHeaderValue("application/grpc");
        using var request = new HttpRequestMessage(HttpMethod.Post, new Uri(server, path))
        {
            Version = HttpVersion.Version20,
            VersionPolicy = HttpVersionPolicy.RequestVersionExact,
            Content = content,
        };
        request.Headers.TE.Add(new TransferCodingWithQualityHeaderValue("trailers"));
        using var response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead);
        await response.Content.ReadAsByteArrayAsync();
        return (RawGrpc.Status(response), Uri.UnescapeDataString(RawGrpc.Message(response) ?? string.Empty));
    }

    /// <summary>Sends some bytes, then nothing until the test lets go.</summary>
    private sealed class TrickleContent(byte[] bytes, CancellationToken hold) : HttpContent
    {
        protected override async Task SerializeToStreamAsync(Stream stream, TransportContext? context)
        {
            await stream.WriteAsync(bytes, hold);
            await stream.FlushAsync(hold);
            try
            {
                await Task.Delay(Timeout.Infinite, hold);
            }
            catch (OperationCanceledException)
            {
            }
        }

        protected override bool TryComputeLength(out long length)
        {
            length = 0;
            return false;
        }
    }
}
