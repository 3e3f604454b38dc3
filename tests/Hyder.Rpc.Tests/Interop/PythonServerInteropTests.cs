using System.Diagnostics;
using Google.Protobuf;
using Hyder.Testing;
using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>A grpcio server on 127.0.0.1 for the test class; it stops when we close its stdin, or after a minute by itself.</summary>
public sealed class PythonServer : IAsyncLifetime
{
    private PythonGrpc? _python;
    private Process? _process;

    public RpcChannel Channel { get; private set; } = null!;

    public async Task InitializeAsync()
    {
        _python = PythonGrpc.Prepare("echo.proto");
        _process = _python.Start("python_server.py", "60");
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(20));
        var line = await _process.StandardOutput.ReadLineAsync(timeout.Token);
        if (!int.TryParse(line, System.Globalization.CultureInfo.InvariantCulture, out var port))
        {
            _process.Kill(entireProcessTree: true);
            throw new InvalidOperationException($"python_server.py did not print its port: {line} {await _process.StandardError.ReadToEndAsync(timeout.Token)}");
        }

        Channel = new RpcChannel(new Uri($"http://127.0.0.1:{port}"));
    }

    public async Task DisposeAsync()
    {
        Channel?.Dispose();
        if (_process is not null)
        {
            _process.StandardInput.Close();
            using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(5));
            try
            {
                await _process.WaitForExitAsync(timeout.Token);
            }
            catch (OperationCanceledException)
            {
                _process.Kill(entireProcessTree: true);
            }

            _process.Dispose();
        }

        _python?.Dispose();
    }
}

/// <summary>Our client against grpcio's server (Debian python3-grpcio): every call kind and error statuses.</summary>
public sealed class PythonServerInteropTests(PythonServer python) : IClassFixture<PythonServer>
{
    private static CallOptions Options(Metadata? headers = null) => new(headers, DateTime.UtcNow.AddSeconds(10));

    [Fact]
    public async Task UnaryCallWithMetadataBothWays()
    {
        byte[] binary = [0, 1, 254, 255];
        using var call = python.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "from dotnet", Payload = ByteString.CopyFrom(binary) },
            Options(new Metadata { { "x-echo", "hello" }, { "x-echo-bin", binary } }));
        var reply = await call;
        Assert.Equal("from dotnet", reply.Text);
        Assert.Equal(binary, reply.Payload.ToByteArray());
        var headers = await call.ResponseHeadersAsync;
        Assert.Equal("hello", headers.GetValue("x-echo"));
        Assert.Equal(binary, headers.GetValueBytes("x-echo-bin"));
        Assert.Equal("hello", call.GetTrailers().GetValue("x-echo-trailer"));
        Assert.Equal(binary, call.GetTrailers().GetValueBytes("x-echo-trailer-bin"));
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task BigMessageRoundTrips()
    {
        var payload = ByteString.CopyFrom(Enumerable.Range(0, 3 * 1024 * 1024).Select(i => (byte)i).ToArray());
        var reply = await python.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = payload }, Options());
        Assert.Equal(payload, reply.Payload);
    }

    [Fact]
    public async Task ServerStreaming()
    {
        using var call = python.Channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Text = "s", Count = 5 }, Options());
        var indexes = new List<int>();
        await foreach (var r in call.ResponseStream.ReadAllAsync())
        {
            indexes.Add(r.Index);
        }

        Assert.Equal([0, 1, 2, 3, 4], indexes);
    }

    [Fact]
    public async Task ServerStreamingThatFailsAfterMessages()
    {
        using var call = python.Channel.ServerStreamingCall(EchoMethods.Count, new EchoRequest { Count = 2, FailCode = (int)StatusCode.Aborted, FailMessage = "conflict" }, Options());
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.True(await call.ResponseStream.MoveNext());
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
        Assert.Equal(new Status(StatusCode.Aborted, "conflict"), e.Status);
        Assert.Equal("yes", e.Trailers.GetValue("x-fail"));
    }

    [Fact]
    public async Task ClientStreaming()
    {
        using var call = python.Channel.ClientStreamingCall(EchoMethods.Collect, Options());
        foreach (var text in new[] { "a", "b", "c" })
        {
            await call.RequestStream.WriteAsync(new EchoRequest { Text = text, Payload = ByteString.CopyFromUtf8("12345") });
        }

        await call.RequestStream.CompleteAsync();
        var reply = await call;
        Assert.Equal("a,b,c", reply.Text);
        Assert.Equal(3, reply.Index);
        Assert.Equal("15", reply.Payload.ToStringUtf8());
    }

    [Fact]
    public async Task DuplexStreamingInterleaved()
    {
        await EchoScenarios.ChatInterleavedAsync(python.Channel, 5, Options());
    }

    [Fact]
    public async Task ErrorStatusWithPercentEncodedUnicodeMessage()
    {
        const string detail = "no such key: ключ 100% ✓";
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await python.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { FailCode = (int)StatusCode.NotFound, FailMessage = detail }, Options()));
        Assert.Equal(new Status(StatusCode.NotFound, detail), e.Status);
        Assert.Equal("yes", e.Trailers.GetValue("x-fail"));
    }

    [Fact]
    public async Task UnknownMethodIsUnimplemented()
    {
        var missing = new Method<EchoRequest, EchoReply>(MethodType.Unary, EchoMethods.Service, "Nope", EchoRequest.Parser, EchoReply.Parser);
        var e = await Assert.ThrowsAsync<RpcException>(async () => await python.Channel.UnaryCall(missing, new EchoRequest(), Options()));
        Assert.Equal(StatusCode.Unimplemented, e.StatusCode);
    }

    [Fact]
    public async Task DeadlineIsExceeded()
    {
        var watch = Stopwatch.StartNew();
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await python.Channel.UnaryCall(EchoMethods.Wait, new EchoRequest(), new CallOptions(Deadline: DateTime.UtcNow.AddMilliseconds(300))));
        Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
        Assert.InRange(watch.Elapsed, TimeSpan.FromMilliseconds(250), TimeSpan.FromSeconds(5));
    }

    [Fact]
    public async Task DuplexCallsInARowAllSucceedHoweverEachEnds() => await EchoScenarios.DuplexCallsInARowAsync(python.Channel, 300);

    [Fact]
    public async Task ClientStreamingCallsInARowAllSucceedHoweverEachEnds() => await EchoScenarios.ClientStreamingCallsInARowAsync(python.Channel, 300);

    [Fact]
    public async Task ServerStreamingAndUnaryCallsInARowAllSucceedHoweverEachEnds() => await EchoScenarios.ServerStreamingAndUnaryCallsInARowAsync(python.Channel, 300);

    [Fact]
    public async Task ResponseOverOurLimitIsResourceExhausted()
    {
        using var channel = new RpcChannel(python.Channel.Address, new RpcChannelOptions { MaxReceiveMessageSize = 1000 });
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Payload = ByteString.CopyFrom(new byte[2000]) }, Options()));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
    }
}
