using Grpc.Core;
using Hyder.Security;
using Hyder.Server.Grpc;
using Xunit;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests;

/// <summary>
/// Pipelined interactive transactions: operations issued without awaiting the previous ones, over
/// a real gRPC stream to HyderService on loopback (the fake engine behind it).
/// </summary>
public sealed class PipelineTests : IAsyncLifetime
{
    private TestServer _server = null!;

    private HyderClient Client => _server.Client;

    private FakeEngine Engine => _server.Engine;

    public async Task InitializeAsync() => _server = await TestServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task PipelinedReadsAnswerEachReadWithItsOwnKeyInCallOrder()
    {
        await Client.ExecuteAsync(IsolationLevel.Serializable, Enumerable.Range(0, 8).Where(i => i != 5).Select(i => HyderOperation.Put(Of($"k{i}"), Of($"v{i}"))));
        await using var tx = await Client.BeginAsync();

        var reads = Enumerable.Range(0, 8).Select(i => tx.GetAsync(Of($"k{i}"))).ToArray();
        var values = await Task.WhenAll(reads);

        Assert.Equal(["v0", "v1", "v2", "v3", "v4", "<absent>", "v6", "v7"], values.Select(Text));
        Assert.True(tx.IsActive);
        Assert.Equal("v3", Text(await tx.GetAsync(Of("k3"))));
    }

    [Fact]
    public async Task PipelinedOperationsRunInCallOrderOnTheServer()
    {
        await using var tx = await Client.BeginAsync();

        // Each read sees exactly the writes issued before it: the server ran them in call order.
        var before = tx.GetAsync(Of("x"));
        var first = tx.PutAsync(Of("x"), Of("1"));
        var middle = tx.GetAsync(Of("x"));
        var second = tx.PutAsync(Of("x"), Of("2"));
        var after = tx.GetAsync(Of("x"));
        var deleted = tx.DeleteAsync(Of("x"));
        var gone = tx.GetAsync(Of("x"));
        await Task.WhenAll(before, first, middle, second, after, deleted, gone);

        Assert.Null(await before);
        Assert.Equal("1", Text(await middle));
        Assert.Equal("2", Text(await after));
        Assert.True(await deleted);
        Assert.Null(await gone);
    }

    [Fact]
    public async Task PipelinedWritesThenCommitCommitThemAll()
    {
        await using var tx = await Client.BeginAsync();
        var writes = Enumerable.Range(0, 10).Select(i => tx.PutAsync(Of($"w{i}"), Of($"{i}"))).ToArray();
        var commit = tx.CommitAsync();

        await Task.WhenAll(writes);
        var result = await commit;

        Assert.True(result.Ordinal > 0);
        Assert.False(tx.IsActive);
        Assert.Equal(Enumerable.Range(0, 10).Select(i => $"{i}"), Enumerable.Range(0, 10).Select(i => Text(Engine.Peek(Of($"w{i}")))));
    }

    [Fact]
    public async Task APutCopiesItsKeyAndValueWhenItIsCalled()
    {
        await using var tx = await Client.BeginAsync();
        var key = Of("copied");
        var value = Of("before");
        Task put;
        using (tx.Batch())
        {
            put = tx.PutAsync(key, value);

            // The batch is not sent yet: what goes out must not be the caller's arrays.
            Array.Fill(key, (byte)'x');
            Array.Fill(value, (byte)'!');
        }

        await put;
        await tx.CommitAsync();

        Assert.Equal("before", Text(Engine.Peek(Of("copied"))));
        Assert.Null(Engine.Peek(key));
    }

    [Fact]
    public async Task OperationsWaitingBehindAnUnansweredOneAreAnsweredOnceItIs()
    {
        Engine.OperationGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var tx = await Client.BeginAsync();

        var gated = tx.GetAsync(Of("gated"));
        var put = tx.PutAsync(Of("behind"), Of("1"));
        var read = tx.GetAsync(Of("behind"));
        var commit = tx.CommitAsync();
        await Engine.GateReached.Task.WaitAsync(TimeSpan.FromSeconds(10));
        Assert.False(gated.IsCompleted);
        Assert.False(put.IsCompleted);

        Engine.OperationGate.SetResult();
        Assert.Null(await gated);
        await put;
        Assert.Equal("1", Text(await read));
        Assert.True((await commit).Ordinal > 0);
        Assert.Equal("1", Text(Engine.Peek(Of("behind"))));
    }

    [Fact]
    public async Task ARefusedOperationFailsItAndEveryLaterPendingOneAndNothingIsApplied()
    {
        await using var tx = await Client.BeginAsync();
        var first = tx.PutAsync(Of("a"), Of("1"));
        var refused = tx.PutAsync([], Of("2"));
        var later = tx.PutAsync(Of("c"), Of("3"));
        var laterRead = tx.GetAsync(Of("a"));
        var commit = tx.CommitAsync();

        await first;
        var e = await Assert.ThrowsAsync<HyderException>(() => refused);
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("operation.key is empty", e.Message, StringComparison.Ordinal);
        Assert.Equal(StatusCode.InvalidArgument, (await Assert.ThrowsAsync<HyderException>(() => later)).StatusCode);
        Assert.Equal(StatusCode.InvalidArgument, (await Assert.ThrowsAsync<HyderException>(() => laterRead)).StatusCode);
        Assert.Equal(StatusCode.InvalidArgument, (await Assert.ThrowsAsync<HyderException>(() => commit)).StatusCode);

        Assert.False(tx.IsActive);
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.GetAsync(Of("a")));
        Assert.Null(Engine.Peek(Of("a")));
        Assert.Null(Engine.Peek(Of("c")));
        Assert.Equal(0, Engine.Committed);
    }

    [Fact]
    public async Task AWriteAReaderMayNotMakeFailsThePipelineWithPermissionDenied()
    {
        var token = ApiKeyStore.NewToken();
        var keys = new ApiKeyStore();
        keys.AddLine(ApiKeyStore.Line("reader-key", ClientRole.Reader, token));
        await using var server = await TestServer.StartAsync(
            configure: s => s with { Token = token },
            configureServer: o => o.Authenticator = new ClientAuthenticator { ApiKeys = keys });
        await using var tx = await server.Client.BeginAsync();
        var read = tx.GetAsync(Of("a"));
        var write = tx.PutAsync(Of("a"), Of("1"));
        var readAfter = tx.GetAsync(Of("b"));

        Assert.Null(await read);
        Assert.Equal(StatusCode.PermissionDenied, (await Assert.ThrowsAsync<HyderException>(() => write)).StatusCode);
        Assert.Equal(StatusCode.PermissionDenied, (await Assert.ThrowsAsync<HyderException>(() => readAfter)).StatusCode);
        Assert.False(tx.IsActive);
    }

    [Fact]
    public async Task CancellingOnePendingOperationCancelsItFailsTheOthersAndAbortsTheTransaction()
    {
        Engine.OperationGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var tx = await Client.BeginAsync();
        using var cts = new CancellationTokenSource();

        var put = tx.PutAsync(Of("early"), Of("1"));
        var gated = tx.GetAsync(Of("gated"), cts.Token);
        var behind = tx.PutAsync(Of("late"), Of("2"));
        var commit = tx.CommitAsync();
        await put;
        await Engine.GateReached.Task.WaitAsync(TimeSpan.FromSeconds(10));

        await cts.CancelAsync();
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => gated);
        Assert.Equal(StatusCode.Cancelled, (await Assert.ThrowsAsync<HyderException>(() => behind)).StatusCode);
        Assert.Equal(StatusCode.Cancelled, (await Assert.ThrowsAsync<HyderException>(() => commit)).StatusCode);
        Assert.False(tx.IsActive);
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.GetAsync(Of("early")));

        Engine.OperationGate.SetResult();
        Assert.Null(Engine.Peek(Of("early")));
        Assert.Null(Engine.Peek(Of("late")));
        Assert.Equal(0, Engine.Committed);
    }

    [Fact]
    public async Task NothingMayBeIssuedOnceTheCommitIs()
    {
        await using var tx = await Client.BeginAsync();
        var put = tx.PutAsync(Of("p"), Of("1"));
        var commit = tx.CommitAsync();

        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.GetAsync(Of("p")));
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.CommitAsync());
        await put;
        await commit;
        Assert.Equal("1", Text(Engine.Peek(Of("p"))));
    }

    [Fact]
    public async Task DisposingWithOperationsPendingEndsTheStreamAndTheServerAborts()
    {
        Engine.OperationGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var tx = await Client.BeginAsync();
        var put = tx.PutAsync(Of("lost"), Of("1"));
        var gated = tx.GetAsync(Of("gated"));
        await put;
        await Engine.GateReached.Task.WaitAsync(TimeSpan.FromSeconds(10));

        await tx.DisposeAsync();
        await Assert.ThrowsAsync<HyderException>(() => gated);
        Assert.False(tx.IsActive);
        Engine.OperationGate.SetResult();
        Assert.Null(Engine.Peek(Of("lost")));
        Assert.Equal(0, Engine.Committed);
    }

    [Fact]
    public async Task ADeadlinePassedWhileNothingIsPendingIsReportedByTheNextOperationThenItIsOver()
    {
        await using var server = await TestServer.StartAsync(configure: s => s with { Timeout = TimeSpan.FromMilliseconds(300) });
        await using var tx = await server.Client.BeginAsync();
        await tx.PutAsync(Of("idle"), Of("1"));

        // The reader sees the stream end at the deadline with nothing pending.
        var waited = System.Diagnostics.Stopwatch.StartNew();
        while (tx.IsActive && waited.Elapsed < TimeSpan.FromSeconds(10))
        {
            await Task.Delay(5);
        }

        Assert.False(tx.IsActive);
        Assert.Equal(StatusCode.DeadlineExceeded, (await Assert.ThrowsAsync<HyderException>(() => tx.GetAsync(Of("idle")))).StatusCode);
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.CommitAsync());
        Assert.Null(server.Engine.Peek(Of("idle")));
    }

    [Fact]
    public async Task StrictOneAtATimeOperationsBehaveAsBefore()
    {
        await using var tx = await Client.BeginAsync();
        Assert.Null(await tx.GetAsync(Of("s")));
        await tx.PutAsync(Of("s"), Of("1"));
        Assert.Equal("1", Text(await tx.GetAsync(Of("s"))));
        Assert.True(await tx.DeleteAsync(Of("s")));
        await tx.PutAsync(Of("s"), Of("2"));
        Assert.True((await tx.CommitAsync()).Ordinal > 0);
        Assert.Equal("2", Text(Engine.Peek(Of("s"))));
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.GetAsync(Of("s")));
    }
}
