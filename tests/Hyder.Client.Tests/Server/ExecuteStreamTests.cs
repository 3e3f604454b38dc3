using System.Net;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Net.Client;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using Microsoft.AspNetCore.Builder;
using Microsoft.AspNetCore.Hosting;
using Microsoft.AspNetCore.Hosting.Server;
using Microsoft.AspNetCore.Hosting.Server.Features;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.DependencyInjection;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests.Server;

/// <summary>The server's ExecuteStream through the generated stub: correlation, bounded concurrency, per-transaction errors and deadlines, the end of the call.</summary>
public sealed class ExecuteStreamTests
{
    private static readonly TimeSpan s_wait = TimeSpan.FromSeconds(20);

    [Fact]
    public async Task ManyTransactionsInFlightOnOneStreamAreEachAnsweredWithTheirOwnId()
    {
        const int count = 60;
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine, configureServer: o => o.Limits.MaxTransactionsPerStream = 100);
        for (var i = 0; i < count; i++)
        {
            await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of($"g{i}"), Of($"v{i}"))]);
        }

        engine.CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();

        // Ids out of order, so an answer matched by position would be caught.
        var ids = Enumerable.Range(0, count).Select(i => (ulong)((i * 37) % count) + 1000).ToArray();
        foreach (var id in ids)
        {
            await call.RequestStream.WriteAsync(Request(id, Put($"k{id}", $"w{id}"), Get($"g{id - 1000}")));
        }

        // Every one is in the engine at once, held at the commit gate.
        await WaitUntilAsync(() => engine.InFlight == count);
        engine.CommitGate.SetResult();
        await call.RequestStream.CompleteAsync();
        var answers = new Dictionary<ulong, V1.ExecuteStreamResponse>();
        await foreach (var answer in call.ResponseStream.ReadAllAsync())
        {
            Assert.True(answers.TryAdd(answer.Id, answer), $"id {answer.Id} answered twice");
        }

        Assert.Equal(ids.Order(), answers.Keys.Order());
        foreach (var (id, answer) in answers)
        {
            Assert.Equal(V1.TransactionStatus.Committed, answer.Response.Outcome.Status);
            Assert.Equal($"v{id - 1000}", answer.Response.Results[1].Value.ToStringUtf8());
            Assert.Equal($"w{id}", Text(engine.Peek(Of($"k{id}"))));
        }

        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task AtMostTheLimitOfTransactionsRunAtOnceAndTheRestWaitUnread()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await TestServer.StartAsync(engine, configureServer: o => o.Limits.MaxTransactionsPerStream = 4);
        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();
        for (ulong id = 1; id <= 20; id++)
        {
            await call.RequestStream.WriteAsync(Request(id, Put($"k{id}", "v")));
        }

        await call.RequestStream.CompleteAsync();
        await WaitUntilAsync(() => engine.InFlight == 4);
        engine.CommitGate.SetResult();
        var answered = 0;
        await foreach (var answer in call.ResponseStream.ReadAllAsync())
        {
            Assert.Equal(V1.TransactionStatus.Committed, answer.Response.Outcome.Status);
            answered++;
        }

        Assert.Equal(20, answered);
        Assert.Equal(4, engine.PeakInFlight);
    }

    /// <summary>
    /// A client that stops reading holds the server back: a burst of answers is written with a
    /// flush at least every <see cref="ExecuteStreamCall.MaxAnswersPerFlush"/> answers, the flush
    /// waits for the client's HTTP/2 window, the slots stay taken and the server stops reading.
    /// Without the bound, the burst went into the response buffer unflushed, every slot came
    /// free and the server read and ran every request the client sent.
    /// </summary>
    [Fact]
    public async Task AClientThatStopsReadingStopsTheServerReadingEvenAfterABurstOfAnswers()
    {
        const int slots = 32;
        const int sent = 100;
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine, configureServer: o => o.Limits.MaxTransactionsPerStream = slots);

        // Each answer carries two values of 60 KB: a few fill the client's 64 KB stream window.
        var big = new string('v', 60 * 1024);
        await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("big1"), Of(big)), HyderOperation.Put(Of("big2"), Of(big))]);
        var before = engine.Committed;
        engine.CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var cancel = new CancellationTokenSource();
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream(cancellationToken: cancel.Token);
        for (ulong id = 1; id <= sent; id++)
        {
            await call.RequestStream.WriteAsync(Request(id, Get("big1"), Get("big2"), Put($"w{id}", "x")));
        }

        // Every slot's transaction waits at the gate; opening it answers them all at once.
        await WaitUntilAsync(() => engine.InFlight == slots);
        engine.CommitGate.SetResult();

        // The client reads nothing: the server settles once the flushed write waits for the window
        // (after every gated transaction has committed, however slowly a loaded machine gets there).
        await WaitUntilAsync(() => engine.Committed - before >= slots);
        long committed;
        do
        {
            committed = engine.Committed;
            await Task.Delay(500);
        }
        while (engine.Committed != committed);

        var ran = committed - before;
        Assert.InRange(ran, slots, slots + ExecuteStreamCall.MaxAnswersPerFlush);
        await cancel.CancelAsync();
    }

    [Fact]
    public async Task AnInvalidTransactionIsAnsweredWithAnErrorAndTheOthersOnTheStreamCommit()
    {
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine);
        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();
        await call.RequestStream.WriteAsync(Request(1, Put("a", "1")));
        await call.RequestStream.WriteAsync(Request(2, Put("b", "2"), Put("", "3")));
        await call.RequestStream.WriteAsync(new V1.ExecuteStreamRequest { Id = 3 });
        await call.RequestStream.WriteAsync(Request(4, Put("c", "4")));
        await call.RequestStream.CompleteAsync();
        var answers = await call.ResponseStream.ReadAllAsync().ToDictionaryAsync(a => a.Id);

        Assert.Equal(V1.TransactionStatus.Committed, answers[1].Response.Outcome.Status);
        Assert.Equal(V1.TransactionStatus.Committed, answers[4].Response.Outcome.Status);
        Assert.Equal((int)StatusCode.InvalidArgument, answers[2].Error.Code);
        Assert.Contains("operations[1].key is empty", answers[2].Error.Message, StringComparison.Ordinal);
        Assert.Equal((int)StatusCode.InvalidArgument, answers[3].Error.Code);
        Assert.Equal("4", Text(engine.Peek(Of("c"))));
        Assert.Null(engine.Peek(Of("b")));
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task ATransactionPastItsDeadlineIsAnsweredDeadlineExceededWhileTheOthersGoOn()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await TestServer.StartAsync(engine);
        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();
        var late = Request(1, Put("late", "1"));
        late.DeadlineMs = 50;
        await call.RequestStream.WriteAsync(late);
        await call.RequestStream.WriteAsync(Request(2, Put("patient", "2")));

        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(1ul, call.ResponseStream.Current.Id);
        Assert.Equal((int)StatusCode.DeadlineExceeded, call.ResponseStream.Current.Error.Code);

        engine.CommitGate.SetResult();
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(2ul, call.ResponseStream.Current.Id);
        Assert.Equal(V1.TransactionStatus.Committed, call.ResponseStream.Current.Response.Outcome.Status);
        await call.RequestStream.CompleteAsync();
        Assert.False(await call.ResponseStream.MoveNext());
    }

    [Fact]
    public async Task AnAnswerOverTheMessageLimitIsRefusedForItsTransactionAlone()
    {
        var engine = new FakeEngine { Limits = new() { MaxOperations = 64, MaxScanRows = 500, MaxMessageBytes = 64 * 1024 } };
        await using var server = await TestServer.StartAsync(engine);
        var value = new byte[30 * 1024];
        foreach (var key in new[] { "big1", "big2", "big3" })
        {
            await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of(key), value)]);
        }

        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();
        await call.RequestStream.WriteAsync(Request(1, Get("big1"), Get("big2"), Get("big3")));
        await call.RequestStream.WriteAsync(Request(2, Get("big1")));
        await call.RequestStream.CompleteAsync();
        var answers = await call.ResponseStream.ReadAllAsync().ToDictionaryAsync(a => a.Id);

        Assert.Equal((int)StatusCode.ResourceExhausted, answers[1].Error.Code);
        Assert.Equal(value.Length, answers[2].Response.Results[0].Value.Length);
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task AStoppingServerSendsItsNoticeAndEndsTheStreamWithUnavailableOnceTheClientHasEndedIt()
    {
        var engine = new FakeEngine();
        var server = await TestServer.StartAsync(engine, configureServer: o => o.ShutdownTimeout = TimeSpan.FromSeconds(30));
        try
        {
            using var channel = GrpcChannel.ForAddress(server.Server.Address);
            using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();
            await call.RequestStream.WriteAsync(Request(1, Put("a", "1")));
            Assert.True(await call.ResponseStream.MoveNext());
            Assert.Equal(V1.TransactionStatus.Committed, call.ResponseStream.Current.Response.Outcome.Status);

            // The stream is idle and open: the stop sends its notice, and the call ends as soon as
            // the client has ended its requests, not after the shutdown timeout.
            using var stopWithin = new CancellationTokenSource(TimeSpan.FromSeconds(20));
            var stop = server.Server.StopAsync(stopWithin.Token);
            Assert.True(await call.ResponseStream.MoveNext());
            Assert.Equal(0ul, call.ResponseStream.Current.Id);
            Assert.Equal((int)StatusCode.Unavailable, call.ResponseStream.Current.Error.Code);
            Assert.Contains("stopping", call.ResponseStream.Current.Error.Message, StringComparison.Ordinal);
            await call.RequestStream.CompleteAsync();
            var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
            Assert.True(e.StatusCode == StatusCode.Unavailable, e.ToString());
            Assert.Contains("every transaction it read is answered", e.Status.Detail, StringComparison.Ordinal);
            await stop;
            Assert.False(stopWithin.IsCancellationRequested);
        }
        finally
        {
            await server.DisposeAsync();
        }
    }

    [Fact]
    public async Task InAnApplicationOfItsOwnTheServiceGetsTheHostsLifetimeSoAStopEndsTheStream()
    {
        var (app, address) = await StartApplicationAsync(new FakeEngine());
        await using var _ = app;

        using var channel = GrpcChannel.ForAddress(address);
        using var call = new V1.Hyder.HyderClient(channel).ExecuteStream();
        await call.RequestStream.WriteAsync(Request(1, Put("a", "1")));
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactionStatus.Committed, call.ResponseStream.Current.Response.Outcome.Status);

        var stop = app.StopAsync();
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(0ul, call.ResponseStream.Current.Id);
        Assert.Equal((int)StatusCode.Unavailable, call.ResponseStream.Current.Error.Code);
        await call.RequestStream.CompleteAsync();
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        await stop;
    }

    /// <summary>
    /// Starts an application of its own that maps <see cref="HyderService"/> over
    /// <paramref name="engine"/> on a loopback port, with <paramref name="beforeService"/>'s
    /// middleware (if any) in front of it.
    /// </summary>
    /// <returns>The running application and its address.</returns>
    internal static async Task<(WebApplication App, string Address)> StartApplicationAsync(ITransactionEngine engine, Func<HttpContext, RequestDelegate, Task>? beforeService = null)
    {
        var builder = WebApplication.CreateEmptyBuilder(new WebApplicationOptions());
        builder.WebHost.UseKestrelCore();
        builder.WebHost.ConfigureKestrel(kestrel => kestrel.Listen(IPAddress.Loopback, 0, listen => listen.Protocols = HttpProtocols.Http2));
        builder.Services.AddLogging();
        builder.Services.AddSingleton(engine);
        builder.Services.AddGrpc();
        var app = builder.Build();
        if (beforeService is not null)
        {
            app.Use(beforeService);
        }

        app.MapGrpcService<HyderService>();
        await app.StartAsync();
        return (app, app.Services.GetRequiredService<IServer>().Features.GetRequiredFeature<IServerAddressesFeature>().Addresses.First());
    }

    internal static V1.ExecuteStreamRequest Request(ulong id, params V1.Operation[] operations)
    {
        var request = new V1.ExecuteStreamRequest { Id = id, Request = new V1.ExecuteRequest() };
        request.Request.Operations.Add(operations);
        return request;
    }

    internal static V1.Operation Put(string key, string value) =>
        new() { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8(key), Value = ByteString.CopyFromUtf8(value) };

    internal static V1.Operation Get(string key) => new() { Kind = V1.OperationKind.Get, Key = ByteString.CopyFromUtf8(key) };

    internal static async Task WaitUntilAsync(Func<bool> condition)
    {
        using var timeout = new CancellationTokenSource(s_wait);
        while (!condition())
        {
            await Task.Delay(5, timeout.Token);
        }
    }
}
