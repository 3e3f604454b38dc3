using System.Diagnostics;
using Xunit;

namespace Hyder.Rpc.Tests;

/// <summary>Deadlines (grpc-timeout) and cancellation (RST_STREAM), seen from both ends.</summary>
public sealed class DeadlineAndCancellationTests
{
    [Fact]
    public async Task DeadlineEndsTheCallWithDeadlineExceededOnBothSides()
    {
        await using var t = await TestServer.StartAsync();
        var watch = Stopwatch.StartNew();

        // 1 s leaves a loaded machine (CI runs the test assemblies side by side) time to reach the handler.
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Wait, new EchoRequest(), new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(1))));
        Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
        Assert.InRange(watch.Elapsed, TimeSpan.FromMilliseconds(950), TimeSpan.FromSeconds(6));
        Assert.Equal("deadline", await t.Service.WaitEnded.Task.WaitAsync(TimeSpan.FromSeconds(5)));
    }

    [Fact]
    public async Task ServerEnforcesTheDeadlineWithoutTheClientsHelp()
    {
        // A raw request with grpc-timeout and no local deadline: only the server can end it.
        await using var t = await TestServer.StartAsync();
        using var http = RawGrpc.CreateClient();
        using var request = RawGrpc.Request(t.Server.Address, EchoMethods.Wait.FullName, RawGrpc.Frame(new EchoRequest()));
        request.Headers.TryAddWithoutValidation("grpc-timeout", "1S");
        var watch = Stopwatch.StartNew();
        using var response = await http.SendAsync(request).WaitAsync(TimeSpan.FromSeconds(6));
        await response.Content.ReadAsByteArrayAsync();
        Assert.InRange(watch.Elapsed, TimeSpan.FromMilliseconds(950), TimeSpan.FromSeconds(6));
        Assert.Equal("4", RawGrpc.Status(response));
        Assert.Equal("deadline", await t.Service.WaitEnded.Task.WaitAsync(TimeSpan.FromSeconds(5)));
    }

    [Fact]
    public async Task ClientCancellationReachesTheHandlersToken()
    {
        await using var t = await TestServer.StartAsync();
        using var cts = new CancellationTokenSource();
        var call = t.Channel.UnaryCall(EchoMethods.Wait, new EchoRequest(), new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(30), CancellationToken: cts.Token));
        await t.Service.WaitStarted.Task.WaitAsync(TimeSpan.FromSeconds(10));
        cts.Cancel();
        var e = await Assert.ThrowsAsync<RpcException>(async () => await call);
        Assert.Equal(StatusCode.Cancelled, e.StatusCode);
        Assert.Equal("cancelled", await t.Service.WaitEnded.Task.WaitAsync(TimeSpan.FromSeconds(5)));
        call.Dispose();
    }

    [Fact]
    public async Task DisposingAStreamingCallCancelsItOnTheServer()
    {
        await using var t = await TestServer.StartAsync();
        var call = t.Channel.DuplexStreamingCall(EchoMethods.Chat, new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(30)));
        await call.RequestStream.WriteAsync(new EchoRequest { Text = "x" });
        Assert.True(await call.ResponseStream.MoveNext());
        call.Dispose();
        Assert.Equal(StatusCode.Cancelled, call.GetStatus().StatusCode);

        // The server is free again: a new call on the same channel works.
        var reply = await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "after" }, new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(10)));
        Assert.Equal("after", reply.Text);
    }

    [Fact]
    public async Task DeadlineAlreadyPassedFailsAtOnce()
    {
        await using var t = await TestServer.StartAsync();
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest(), new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(-1))));
        Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
    }
}
