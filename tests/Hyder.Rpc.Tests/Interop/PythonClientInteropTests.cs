using System.Diagnostics;
using System.Text.Json;
using Hyder.Testing;
using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>Starts our server, runs grpcio's client against it once, and keeps what the client reported.</summary>
public sealed class PythonClientRun : IAsyncLifetime
{
    private static readonly TimeSpan s_clientTimeout = TimeSpan.FromSeconds(60);
    private TestServer? _server;

    public JsonElement Report { get; private set; }

    internal EchoService Service => _server!.Service;

    public async Task InitializeAsync()
    {
        using var python = PythonGrpc.Prepare("echo.proto");
        // Few streams per connection, so that streams our server leaves behind fail the calls in a row sooner (see ConnectionReuseTests).
        _server = await TestServer.StartAsync(options => options.ConfigureKestrel = kestrel => kestrel.Limits.Http2.MaxStreamsPerConnection = 10);
        Report = await python.RunClientAsync("python_client.py", _server.Server.Port, s_clientTimeout);
    }

    public async Task DisposeAsync()
    {
        if (_server is not null)
        {
            await _server.DisposeAsync();
        }
    }
}

/// <summary>grpcio's client (Debian python3-grpcio) against our server: every call kind and error statuses.</summary>
public sealed class PythonClientInteropTests(PythonClientRun run) : IClassFixture<PythonClientRun>
{
    private JsonElement Report(string name) => run.Report.GetProperty(name);

    [Fact]
    public void UnaryCallWithMetadataBothWays()
    {
        var unary = Report("unary");
        Assert.Equal("OK", unary.GetProperty("code").GetString());
        Assert.Equal("from python", unary.GetProperty("text").GetString());
        Assert.Equal("0001feff", unary.GetProperty("payload").GetString());
        Assert.Equal("hello", unary.GetProperty("headers").GetProperty("x-echo").GetString());
        Assert.Equal("0001feff", unary.GetProperty("headers").GetProperty("x-echo-bin").GetString());
        Assert.Equal("hello", unary.GetProperty("trailers").GetProperty("x-echo-trailer").GetString());
        Assert.Equal("0001feff", unary.GetProperty("trailers").GetProperty("x-echo-trailer-bin").GetString());
    }

    [Fact]
    public void BigMessageRoundTrips() => Assert.True(Report("big").GetProperty("equal").GetBoolean());

    [Fact]
    public void ServerStreaming() =>
        Assert.Equal([0, 1, 2, 3, 4], Report("count").EnumerateArray().Select(e => e.GetInt32()));

    [Fact]
    public void ServerStreamingThatFailsAfterMessages()
    {
        var r = Report("count_fail");
        Assert.Equal([0, 1], r.GetProperty("seen").EnumerateArray().Select(e => e.GetInt32()));
        Assert.Equal("ABORTED", r.GetProperty("code").GetString());
        Assert.Equal("conflict", r.GetProperty("details").GetString());
        Assert.Equal("yes", r.GetProperty("trailers").GetProperty("x-fail").GetString());
    }

    [Fact]
    public void ClientStreaming()
    {
        var r = Report("collect");
        Assert.Equal("a,b,c", r.GetProperty("text").GetString());
        Assert.Equal(3, r.GetProperty("index").GetInt32());
        Assert.Equal("15", r.GetProperty("payload").GetString());
    }

    [Fact]
    public void DuplexStreaming() =>
        Assert.Equal(["m0:0", "m1:1", "m2:2", "m3:3"], Report("chat").EnumerateArray().Select(e => $"{e[0].GetString()}:{e[1].GetInt32()}"));

    [Fact]
    public void CallsTheServerEndsFirstInARowAllSucceed()
    {
        var r = Report("server_ends_first");
        Assert.True(r.GetProperty("calls").GetInt32() == 300, $"Only {r.GetProperty("calls").GetInt32()} calls in a row succeeded: {r}");
    }

    [Fact]
    public void ErrorStatusWithPercentEncodedUnicodeMessage()
    {
        var r = Report("error");
        Assert.Equal("NOT_FOUND", r.GetProperty("code").GetString());
        Assert.Equal("no such key: ключ 100% ✓", r.GetProperty("details").GetString());
        Assert.Equal("yes", r.GetProperty("trailers").GetProperty("x-fail").GetString());
    }

    [Fact]
    public void MessageOverTheLimitIsResourceExhausted() =>
        Assert.Equal("RESOURCE_EXHAUSTED", Report("too_big").GetProperty("code").GetString());

    [Fact]
    public void UnknownMethodIsUnimplemented() =>
        Assert.Equal("UNIMPLEMENTED", Report("unimplemented").GetProperty("code").GetString());

    [Fact]
    public void DeadlineIsExceeded()
    {
        var r = Report("deadline");
        Assert.Equal("DEADLINE_EXCEEDED", r.GetProperty("code").GetString());
        Assert.InRange(r.GetProperty("seconds").GetDouble(), 0.25, 5);
    }

    [Fact]
    public async Task CancellationReachesOurHandler()
    {
        Assert.True(Report("cancel").GetProperty("cancelled").GetBoolean());
        var watch = Stopwatch.StartNew();
        while (!run.Service.WaitEndings.Contains("cancelled") && watch.Elapsed < TimeSpan.FromSeconds(5))
        {
            await Task.Delay(20);
        }

        Assert.Contains("cancelled", run.Service.WaitEndings);
    }
}
