using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>The server's HTTP/2 wire rules, checked on raw requests and responses (PROTOCOL-HTTP2.md).</summary>
public sealed class WireRuleTests
{
    [Fact]
    public async Task ResponseHasGrpcContentTypeAndStatusInTrailers()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, RawGrpc.Frame(new EchoRequest { Text = "raw" }));
        using var response = await http.SendAsync(request);
        var body = await response.Content.ReadAsByteArrayAsync();
        Assert.Equal(new Version(2, 0), response.Version);
        Assert.Equal(200, (int)response.StatusCode);
        Assert.Equal("application/grpc", response.Content.Headers.ContentType?.MediaType);
        Assert.Equal(0, body[0]);
        Assert.Equal("raw", EchoReply.Parser.ParseFrom(body.AsSpan(5).ToArray()).Text);
        Assert.Equal("0", RawGrpc.Header(response.TrailingHeaders, "grpc-status"));
        Assert.Null(RawGrpc.Header(response.Headers, "grpc-status"));
    }

    [Fact]
    public async Task ProtoSubtypeAndParametersAreAccepted()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        foreach (var contentType in new[] { "application/grpc+proto", "application/grpc; charset=utf-8" })
        {
            using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, RawGrpc.Frame(new EchoRequest()), contentType);
            using var response = await http.SendAsync(request);
            await response.Content.ReadAsByteArrayAsync();
            Assert.Equal("0", RawGrpc.Status(response));
        }
    }

    [Theory]
    [InlineData("application/json")]
    [InlineData("text/plain")]
    [InlineData("application/grpc+json")]
    public async Task OtherContentTypesGet415(string contentType)
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, RawGrpc.Frame(new EchoRequest()), contentType);
        using var response = await http.SendAsync(request);
        Assert.Equal(415, (int)response.StatusCode);
    }

    [Fact]
    public async Task UnknownMethodGetsATrailersOnlyUnimplemented()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, "/hyder.rpc.test.Echo/Nope", RawGrpc.Frame(new EchoRequest()));
        using var response = await http.SendAsync(request);
        var body = await response.Content.ReadAsByteArrayAsync();
        Assert.Equal(200, (int)response.StatusCode);
        Assert.Empty(body);
        Assert.Equal("12", RawGrpc.Header(response.Headers, "grpc-status"));
        Assert.Empty(response.TrailingHeaders);
    }

    [Fact]
    public async Task CompressedFlagWithoutNegotiatedEncodingIsInternal()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, RawGrpc.Frame(new EchoRequest(), flag: 1));
        using var response = await http.SendAsync(request);
        await response.Content.ReadAsByteArrayAsync();
        Assert.Equal("13", RawGrpc.Status(response));
        Assert.Contains("compressed", RawGrpc.Message(response), StringComparison.OrdinalIgnoreCase);
    }

    [Fact]
    public async Task UnsupportedGrpcEncodingIsUnimplementedWithAcceptedEncodings()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, RawGrpc.Frame(new EchoRequest(), flag: 1));
        request.Headers.TryAddWithoutValidation("grpc-encoding", "gzip");
        using var response = await http.SendAsync(request);
        await response.Content.ReadAsByteArrayAsync();
        Assert.Equal("12", RawGrpc.Status(response));
        Assert.Equal("identity", RawGrpc.Header(response.Headers, "grpc-accept-encoding"));
    }

    [Fact]
    public async Task TruncatedMessageIsInternal()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        var frame = RawGrpc.Frame(new EchoRequest { Text = "truncated" });
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, frame[..^3]);
        using var response = await http.SendAsync(request);
        await response.Content.ReadAsByteArrayAsync();
        Assert.Equal("13", RawGrpc.Status(response));
    }

    [Fact]
    public async Task TwoMessagesToAUnaryMethodIsInternal()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        var frame = RawGrpc.Frame(new EchoRequest { Text = "one" });
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, [.. frame, .. frame]);
        using var response = await http.SendAsync(request);
        await response.Content.ReadAsByteArrayAsync();
        Assert.Equal("13", RawGrpc.Status(response));
    }

    [Fact]
    public async Task StatusMessageIsPercentEncodedOnTheWire()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        var failing = new EchoRequest { FailCode = (int)StatusCode.InvalidArgument, FailMessage = "bad 100% é" };
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, RawGrpc.Frame(failing));
        using var response = await http.SendAsync(request);
        await response.Content.ReadAsByteArrayAsync();
        Assert.Equal("3", RawGrpc.Status(response));
        Assert.Equal("bad 100%25 %C3%A9", RawGrpc.Message(response));
    }

    [Fact]
    public async Task GetIsRejected()
    {
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Unary.FullName, []);
        request.Method = HttpMethod.Get;
        request.Content = null;
        using var response = await http.SendAsync(request);
        Assert.Equal(405, (int)response.StatusCode);
    }

    [Theory]
    [InlineData("1H", 36_000_000_000L)]
    [InlineData("2M", 1_200_000_000L)]
    [InlineData("3S", 30_000_000L)]
    [InlineData("250m", 2_500_000L)]
    [InlineData("7u", 70L)]
    [InlineData("150n", 2L)]
    [InlineData("99999999S", 999_999_990_000_000L)]
    public void TimeoutParsesEveryUnit(string text, long ticks)
    {
        Assert.True(GrpcTimeout.TryParse(text, out var timeout));
        Assert.Equal(ticks, timeout.Ticks);
    }

    [Theory]
    [InlineData("")]
    [InlineData("S")]
    [InlineData("10")]
    [InlineData("10x")]
    [InlineData("-1S")]
    [InlineData("123456789S")]
    [InlineData("1.5S")]
    public void MalformedTimeoutsAreRefused(string text) => Assert.False(GrpcTimeout.TryParse(text, out _));

    [Fact]
    public void FormattedTimeoutsFitEightDigitsAndNeverShrink()
    {
        foreach (var span in new[] { TimeSpan.FromTicks(1), TimeSpan.FromMilliseconds(1.5), TimeSpan.FromSeconds(30), TimeSpan.FromHours(30), TimeSpan.FromDays(10_000) })
        {
            var text = GrpcTimeout.Format(span);
            Assert.InRange(text.Length, 2, 9);
            Assert.True(GrpcTimeout.TryParse(text, out var back));
            Assert.True(back >= span, $"{span} formatted as {text}");
        }

        Assert.Equal("1n", GrpcTimeout.Format(TimeSpan.FromSeconds(-1)));
    }

    [Theory]
    [InlineData("plain", "plain")]
    [InlineData("100%", "100%25")]
    [InlineData("é", "%C3%A9")]
    [InlineData("line\nbreak", "line%0Abreak")]
    public void PercentEncodingMatchesTheSpec(string message, string wire)
    {
        Assert.Equal(wire, PercentEncoding.Encode(message));
        Assert.Equal(message, PercentEncoding.Decode(wire));
    }

    [Fact]
    public void PercentDecodingKeepsMalformedEscapes() => Assert.Equal("50%zz%4", PercentEncoding.Decode("50%zz%4"));

    [Fact]
    public void MetadataRefusesReservedKeysAndBadValues()
    {
        var metadata = new Metadata();
        Assert.Throws<ArgumentException>(() => metadata.Add("grpc-status", "0"));
        Assert.Throws<ArgumentException>(() => metadata.Add("bad key", "v"));
        Assert.Throws<ArgumentException>(() => metadata.Add("x-text", "é"));
        Assert.Throws<ArgumentException>(() => metadata.Add("x-data-bin", "text"));
        Assert.Throws<ArgumentException>(() => metadata.Add("x-text", [1, 2]));
        metadata.Add("X-Upper", "v");
        Assert.Equal("x-upper", metadata[0].Key);
    }
}
