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

        // Open the connection first: a cold first call on a loaded machine (CI runs the test
        // assemblies side by side) can take most of a second to reach the server, and a call
        // that arrives after its deadline never reaches its handler at all.
        await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "warm" }, new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(10)));

        var watch = Stopwatch.StartNew();
        var deadline = DateTime.UtcNow.AddSeconds(2);
        var e = await Assert.ThrowsAsync<RpcException>(async () =>
            await t.Channel.UnaryCall(EchoMethods.Wait, new EchoRequest(), new CallOptions(Deadline: deadline)));
        Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
        Assert.InRange(watch.Elapsed, TimeSpan.FromMilliseconds(1950), TimeSpan.FromSeconds(7));

        // The handler's token must fire. Which side notices first is a race, and both are right:
        // the server's own timer (its deadline starts when the request arrives, so it is a little
        // later than the client's), or the client's RST_STREAM when its deadline fires first.
        await WithinAsync(t.Service.WaitStarted.Task, TimeSpan.FromSeconds(5), "The call never reached its handler.");
        var cancelledAt = await WithinAsync(t.Service.WaitCancelledAt.Task, TimeSpan.FromSeconds(5), "The handler's token did not fire within 5 s of the deadline.");
        Assert.True(cancelledAt >= deadline.AddMilliseconds(-50), $"The handler's token fired at {cancelledAt:HH:mm:ss.fff}, before the deadline {deadline:HH:mm:ss.fff}.");
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

    [Fact]
    public async Task EveryHandlerReachedIsCancelledWhenItsDeadlinePasses()
    {
        // Many deadlines around the moment a call reaches its handler: whether the client's reset or
        // the server's timer comes first, or the reset arrives before the handler runs, no handler
        // that ran may be left waiting on a token that never fires.
        await using var t = await TestServer.StartAsync();
        await t.Channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "warm" }, new CallOptions(Deadline: DateTime.UtcNow.AddSeconds(10)));
        var calls = Enumerable.Range(0, 40).Select(async i =>
        {
            var e = await Assert.ThrowsAsync<RpcException>(async () =>
                await t.Channel.UnaryCall(EchoMethods.Wait, new EchoRequest(), new CallOptions(Deadline: DateTime.UtcNow.AddMilliseconds(i * 25))));
            Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
        });
        await Task.WhenAll(calls).WaitAsync(TimeSpan.FromSeconds(20));

        var watch = Stopwatch.StartNew();
        while (t.Service.WaitEndings.Count < t.Service.WaitStarts && watch.Elapsed < TimeSpan.FromSeconds(5))
        {
            await Task.Delay(20);
        }

        Assert.True(t.Service.WaitStarts > 0, "No call reached its handler before its deadline: the test proved nothing.");
        Assert.Equal(t.Service.WaitStarts, t.Service.WaitEndings.Count);
    }

    private static async Task<T> WithinAsync<T>(Task<T> task, TimeSpan limit, string message)
    {
        await WithinAsync((Task)task, limit, message);
        return await task;
    }

    private static async Task WithinAsync(Task task, TimeSpan limit, string message)
    {
        try
        {
            await task.WaitAsync(limit);
        }
        catch (TimeoutException)
        {
            Assert.Fail(message);
        }
    }
}
