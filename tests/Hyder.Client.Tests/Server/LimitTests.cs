using System.Diagnostics;
using System.Net;
using System.Net.Http.Headers;
using Grpc.Core;
using Xunit;

namespace Hyder.Client.Tests.Server;

/// <summary>Kestrel's limits and the per-address connection cap, as HyderGrpcServer applies GrpcServerLimits.</summary>
public sealed class LimitTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ConnectionsPastTheCapAreRefusedWhileOpenOnesWork(bool perAddress)
    {
        await using var server = await TestServer.StartAsync(configureServer: o =>
        {
            o.Limits.MaxConnections = perAddress ? null : 2;
            o.Limits.MaxConnectionsPerAddress = perAddress ? 2 : null;
        });
        HyderClient Connect() => new(new HyderClientSettings { Endpoint = server.Server.Address, Timeout = TimeSpan.FromSeconds(10), MaxRetries = 0 });
        await using var first = Connect();
        await using var second = Connect();
        await first.GetStatusAsync();
        await second.GetStatusAsync();

        await using (var third = Connect())
        {
            var e = await Assert.ThrowsAsync<HyderException>(() => third.GetStatusAsync());
            Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        }

        await first.GetStatusAsync();
        await second.GetStatusAsync();

        // A closed connection frees its place once the server sees the close.
        await first.DisposeAsync();
        await using var fourth = Connect();
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                await fourth.GetStatusAsync();
                break;
            }
            catch (HyderException e) when (e.StatusCode == StatusCode.Unavailable && attempt < 200)
            {
                await Task.Delay(50);
            }
        }
    }

    [Fact]
    public async Task OversizedHeadersFailTheCallAndOtherCallsSucceed()
    {
        await using var server = await TestServer.StartAsync(configureServer: o => o.Limits.MaxHeaderBytes = 4096);
        await using var bloated = new HyderClient(new HyderClientSettings { Endpoint = server.Server.Address, Token = new string('p', 8192), MaxRetries = 0 });
        var e = await Assert.ThrowsAsync<HyderException>(() => bloated.GetStatusAsync());
        Assert.NotEqual(StatusCode.OK, e.StatusCode);
        await server.Client.GetStatusAsync();
    }

    [Fact]
    public async Task AnOversizedRequestIsResourceExhaustedAndTheConnectionStaysUsable()
    {
        await using var server = await TestServer.StartAsync(configureServer: o => o.MaxMessageBytes = 64 * 1024);
        var e = await Assert.ThrowsAsync<HyderException>(() => server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put("big"u8.ToArray(), new byte[100 * 1024])]));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
        Assert.Null(server.Engine.Peek("big"u8.ToArray()));
        await server.Client.GetStatusAsync();
    }

    [Theory]
    [InlineData(0)] // headers, then nothing
    [InlineData(3)] // headers and part of a message prefix, then nothing
    [InlineData(9)] // a whole prefix and part of the message
    public async Task ASlowUnaryRequestIsCutOffWhileOtherCallsSucceed(int sent)
    {
        await using var server = await TestServer.StartAsync(configureServer: o => o.Limits.RequestTimeout = TimeSpan.FromSeconds(2));
        var message = new Api.V1.ReadRequest();
        message.Keys.Add(Google.Protobuf.ByteString.CopyFromUtf8("a key long enough to be cut"));
        var frame = new byte[5 + message.CalculateSize()];
        System.Buffers.Binary.BinaryPrimitives.WriteInt32BigEndian(frame.AsSpan(1), message.CalculateSize());
        Google.Protobuf.MessageExtensions.ToByteArray(message).CopyTo(frame, 5);
        using var hold = new CancellationTokenSource();
        using var http = new HttpClient(new SocketsHttpHandler()) { Timeout = Timeout.InfiniteTimeSpan };
        var watch = Stopwatch.StartNew();
        var slow = SendAsync(http, new Uri(server.Server.Address, "/hyder.v1.Hyder/Read"), new TrickleContent(frame[..sent], hold.Token));

        // Meanwhile another client's calls succeed.
        for (var i = 0; i < 5; i++)
        {
            await server.Client.GetStatusAsync();
        }

        var outcome = await slow.WaitAsync(TimeSpan.FromSeconds(20));
        await hold.CancelAsync();
        Assert.NotEqual("0", outcome);
        Assert.InRange(watch.Elapsed, TimeSpan.FromSeconds(1.9), TimeSpan.FromSeconds(15));
    }

    [Fact]
    public async Task AMessageWithANestedLengthNearIntMaxIsInternalAndTheServerCarriesOn()
    {
        // The fuzzer's find (docs/reliability.md): begin, a put, then an operation whose key claims 2^31 - 1 bytes.
        var frames = Convert.FromHexString("00000000020A00" + "000000000F120D080112026B321A0576616C7565" + "000000000C12FFFFFFFF07080312016122017A280A" + "00000000021A00");
        await using var server = await TestServer.StartAsync();
        using var http = new HttpClient(new SocketsHttpHandler()) { Timeout = TimeSpan.FromSeconds(20) };
        Assert.Equal("13", await SendAsync(http, new Uri(server.Server.Address, "/hyder.v1.Hyder/Transact"), new ByteArrayContent(frames)));
        Assert.Null(server.Engine.Peek("k2"u8.ToArray()));
        await server.Client.GetStatusAsync();
    }

    /// <summary>The call's grpc-status, or the failure that ended it.</summary>
    private static async Task<string> SendAsync(HttpClient http, Uri uri, HttpContent content)
    {
        content.Headers.ContentType = new MediaTypeHeaderValue("application/grpc");
        using var request = new HttpRequestMessage(HttpMethod.Post, uri) { Version = HttpVersion.Version20, VersionPolicy = HttpVersionPolicy.RequestVersionExact, Content = content };
        request.Headers.TE.Add(new TransferCodingWithQualityHeaderValue("trailers"));
        try
        {
            using var response = await http.SendAsync(request, HttpCompletionOption.ResponseHeadersRead);
            await response.Content.ReadAsByteArrayAsync();
            return response.TrailingHeaders.TryGetValues("grpc-status", out var trailer) ? trailer.Single()
                : response.Headers.TryGetValues("grpc-status", out var header) ? header.Single()
                : $"HTTP {(int)response.StatusCode}";
        }
        catch (HttpRequestException e)
        {
            return e.GetType().Name + ": " + e.Message;
        }
        catch (IOException e)
        {
            return e.GetType().Name + ": " + e.Message;
        }
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
