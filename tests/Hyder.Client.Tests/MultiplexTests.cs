using Grpc.Core;
using Hyder.Security;
using Hyder.Server.Grpc;
using Hyder.Testing;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using static Hyder.Client.Tests.Server.ExecuteStreamTests;

namespace Hyder.Client.Tests;

/// <summary>HyderClientSettings.Multiplex: one-shot transactions on the client's shared ExecuteStream call.</summary>
public sealed class MultiplexTests
{
    private static Func<HyderClientSettings, HyderClientSettings> Multiplexed(TimeSpan? timeout = null) =>
        s => s with { Multiplex = true, Timeout = timeout ?? s.Timeout };

    [Fact]
    public async Task ConcurrentTransactionsOnTheSharedStreamEachGetTheirOwnResults()
    {
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine, Multiplexed());
        for (var i = 0; i < 100; i++)
        {
            await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of($"g{i}"), Of($"v{i}"))]);
        }

        engine.CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var running = Enumerable.Range(0, 100).Select(i => server.Client.ExecuteAsync(
            IsolationLevel.Serializable,
            [HyderOperation.Put(Of($"k{i}"), Of($"w{i}")), HyderOperation.Get(Of($"g{i}"))])).ToArray();
        await WaitUntilAsync(() => engine.InFlight == 100);
        engine.CommitGate.SetResult();
        var commits = await Task.WhenAll(running);

        for (var i = 0; i < commits.Length; i++)
        {
            Assert.Equal($"v{i}", Text(commits[i].Results[1].Value));
            Assert.Equal($"w{i}", Text(engine.Peek(Of($"k{i}"))));
        }

        Assert.Equal(100, commits.Select(c => c.Ordinal).Distinct().Count());
    }

    [Fact]
    public async Task AnInvalidTransactionThrowsItsStatusAndTheSharedStreamGoesOn()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await TestServer.StartAsync(engine, Multiplexed());
        var held = server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        await WaitUntilAsync(() => engine.InFlight == 1);

        var e = await Assert.ThrowsAsync<HyderException>(() => server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put([], Of("2"))]));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("operations[0].key is empty", e.Message, StringComparison.Ordinal);

        engine.CommitGate.SetResult();
        Assert.True((await held).Ordinal > 0);
        var after = await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("a"))]);
        Assert.Equal("1", Text(after.Results[0].Value));
    }

    [Fact]
    public async Task AReaderKeyIsRefusedAWriteOnTheStreamAndMayRead()
    {
        var keys = new ApiKeyStore();
        var reader = ApiKeyStore.NewToken();
        var writer = ApiKeyStore.NewToken();
        keys.AddLine(ApiKeyStore.Line("reader-key", ClientRole.Reader, reader));
        keys.AddLine(ApiKeyStore.Line("writer-key", ClientRole.Writer, writer));
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine, s => s with { Multiplex = true, Token = writer }, o => o.Authenticator = new ClientAuthenticator { ApiKeys = keys });
        await using var readerClient = new HyderClient(server.Client.Settings with { Token = reader });

        var e = await Assert.ThrowsAsync<HyderException>(() => readerClient.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("x")), HyderOperation.Put(Of("x"), Of("1"))]));
        Assert.Equal(StatusCode.PermissionDenied, e.StatusCode);
        Assert.Contains("reader-key (reader) may only read", e.Message, StringComparison.Ordinal);
        Assert.Null(engine.Peek(Of("x")));

        await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("x"), Of("2"))]);
        var read = await readerClient.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("x"))]);
        Assert.Equal("2", Text(read.Results[0].Value));
    }

    [Fact]
    public async Task AStreamTheServerRefusesFailsItsTransactionWithTheServersStatus()
    {
        // The server ends the call with UNAUTHENTICATED at once; the client's write of the request
        // may fail first (as CANCELLED, the call being over): the transaction must still report
        // the server's status. Fresh clients, so that every attempt opens a new stream.
        var keys = new ApiKeyStore();
        keys.AddLine(ApiKeyStore.Line("writer-key", ClientRole.Writer, ApiKeyStore.NewToken()));
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine, s => s with { Multiplex = true }, o => o.Authenticator = new ClientAuthenticator { ApiKeys = keys });
        for (var attempt = 0; attempt < 40; attempt++)
        {
            await using var stranger = new HyderClient(server.Client.Settings with { Token = attempt % 2 == 0 ? null : ApiKeyStore.NewToken() });
            var e = await Assert.ThrowsAsync<HyderException>(() => stranger.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("x"))]));
            Assert.True(e.StatusCode == StatusCode.Unauthenticated, $"attempt {attempt}: {e.StatusCode} {e.Message}");
        }
    }

    [Fact]
    public async Task ATransactionPastTheClientsTimeoutFailsWithDeadlineExceeded()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await TestServer.StartAsync(engine, Multiplexed(TimeSpan.FromMilliseconds(100)));

        var e = await Assert.ThrowsAsync<HyderException>(() => server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]));
        Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);

        engine.CommitGate.SetResult();
        var read = await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("a"))]);
        Assert.False(read.Results[0].Found);
    }

    [Fact]
    public async Task ACancelledTransactionIsAbandonedLocallyAndMayStillCommit()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await TestServer.StartAsync(engine, Multiplexed());
        using var cancel = new CancellationTokenSource();
        var abandoned = server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))], cancel.Token);
        await WaitUntilAsync(() => engine.InFlight == 1);
        await cancel.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => abandoned);

        engine.CommitGate.SetResult();
        await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("b"), Of("2"))]);
        Assert.Equal("1", Text(engine.Peek(Of("a"))));
        Assert.Equal("2", Text(engine.Peek(Of("b"))));
    }

    [Fact]
    public async Task AWriteInFlightWhenTheStreamBreaksIsOutcomeUnknownAndTheNextTransactionOpensANewStream()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        var endPoint = ReservedPorts.TakeEndPoint();
        var first = await HyderGrpcServer.StartAsync(engine, new GrpcServerOptions { EndPoint = endPoint, MaxMessageBytes = engine.Limits.MaxMessageBytes });
        await using var client = new HyderClient(new HyderClientSettings { Endpoint = first.Address, Multiplex = true, RetryDelay = TimeSpan.FromMilliseconds(1) });
        try
        {
            var held = client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
            await WaitUntilAsync(() => engine.InFlight == 1);

            // Stop at once: the calls in flight are aborted.
            using (var now = new CancellationTokenSource())
            {
                await now.CancelAsync();
                await first.StopAsync(now.Token);
            }

            var e = await Assert.ThrowsAsync<TransactionOutcomeUnknownException>(() => held);
            Assert.Contains("broke after the transaction was sent", e.Message, StringComparison.Ordinal);
        }
        finally
        {
            await first.DisposeAsync();
        }

        engine.CommitGate = null;
        await using var second = await HyderGrpcServer.StartAsync(engine, new GrpcServerOptions { EndPoint = endPoint, MaxMessageBytes = engine.Limits.MaxMessageBytes });
        var commit = await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("b"), Of("2"))]);
        Assert.True(commit.Ordinal > 0);
        Assert.Equal("2", Text(engine.Peek(Of("b"))));
    }

    [Fact]
    public async Task AfterTheServerRestartsTheNextTransactionsRunOnANewStream()
    {
        var engine = new FakeEngine();
        var endPoint = ReservedPorts.TakeEndPoint();
        var options = new GrpcServerOptions { EndPoint = endPoint, MaxMessageBytes = engine.Limits.MaxMessageBytes };
        var first = await HyderGrpcServer.StartAsync(engine, options);
        await using var client = new HyderClient(new HyderClientSettings { Endpoint = first.Address, Multiplex = true, MaxRetries = 40, RetryDelay = TimeSpan.FromMilliseconds(1), MaxRetryDelay = TimeSpan.FromMilliseconds(250) });
        await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        await first.DisposeAsync();

        // While the server is down a write fails as a unary call would (UNAVAILABLE: nothing was sent).
        var down = await Assert.ThrowsAsync<HyderException>(() => client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("b"), Of("2"))]));
        Assert.Equal(StatusCode.Unavailable, down.StatusCode);
        Assert.IsNotType<TransactionOutcomeUnknownException>(down);

        await using var second = await HyderGrpcServer.StartAsync(engine, options);

        // A read is retried until the channel has connected again (Grpc.Net.Client backs off its reconnects).
        var read = await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(Of("a"))]);
        Assert.Equal("1", Text(read.Results[0].Value));
        var commits = await Task.WhenAll(Enumerable.Range(0, 10).Select(i =>
            client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of($"c{i}"), Of("3")), HyderOperation.Get(Of("a"))])));
        Assert.All(commits, c => Assert.Equal("1", Text(c.Results[1].Value)));
    }

    [Fact]
    public async Task AStreamThatFailsBeforeTheServersHeadersCarriedNothingSoItsWriteRunsOnTheNextStream()
    {
        // The first two ExecuteStream calls are reset before the service sees them, as a call
        // started on a connection the server has just closed fails: before the response headers.
        var engine = new FakeEngine();
        var calls = 0;
        var (app, address) = await StartApplicationAsync(engine, async (context, next) =>
        {
            if (context.Request.Path == "/hyder.v1.Hyder/ExecuteStream" && Interlocked.Increment(ref calls) <= 2)
            {
                context.Abort();
                return;
            }

            await next(context);
        });
        await using var _ = app;

        await using var client = new HyderClient(new HyderClientSettings { Endpoint = new Uri(address), Multiplex = true, MaxRetries = 5, RetryDelay = TimeSpan.FromMilliseconds(1) });
        var commit = await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);

        Assert.True(commit.Ordinal > 0);
        Assert.Equal(3, Volatile.Read(ref calls));
        Assert.Equal(1, engine.Committed);
        Assert.Equal("1", Text(engine.Peek(Of("a"))));
    }

    [Fact]
    public async Task AStoppingServerAnswersTheTransactionInFlightAndEndsTheSharedStreamWithoutWaitingOutItsShutdownTimeout()
    {
        var engine = new FakeEngine { CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously) };
        await using var server = await TestServer.StartAsync(engine, Multiplexed(), o => o.ShutdownTimeout = TimeSpan.FromSeconds(60));
        var held = server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("a"), Of("1"))]);
        await WaitUntilAsync(() => engine.InFlight == 1);

        using var stopWithin = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        var stop = server.Server.StopAsync(stopWithin.Token);
        engine.CommitGate.SetResult();

        // The server answers the held transaction, then ends the stream (the client ends its
        // requests on the stop notice, or the server's short grace passes); an open stream would
        // otherwise hold the stop for the whole shutdown timeout.
        Assert.True((await held).Ordinal > 0);
        await stop;
        Assert.False(stopWithin.IsCancellationRequested);
        Assert.Equal("1", Text(engine.Peek(Of("a"))));
    }

    [Fact]
    public void TheConnectionStringTurnsMultiplexingOn()
    {
        Assert.True(HyderClientSettings.Parse("Endpoint=http://127.0.0.1:5000;Multiplex=true").Multiplex);
        Assert.False(HyderClientSettings.Parse("Endpoint=http://127.0.0.1:5000").Multiplex);
        Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse("Endpoint=http://127.0.0.1:5000;Multiplex=sometimes"));
        Assert.Contains("Multiplex = True", HyderClientSettings.Parse("Endpoint=http://127.0.0.1:5000;Multiplex=true").ToString(), StringComparison.Ordinal);
    }
}
