using Google.Protobuf;
using Grpc.Core;
using Hyder.Server.Engine;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests;

/// <summary>Bad requests, engine refusals, admission, deadlines and cancellation, as statuses and typed exceptions.</summary>
public sealed class ErrorTests : IAsyncLifetime
{
    private TestServer _server = null!;

    private HyderClient Client => _server.Client;

    private FakeEngine Engine => _server.Engine;

    public async Task InitializeAsync() => _server = await TestServer.StartAsync();

    public async Task DisposeAsync() => await _server.DisposeAsync();

    [Fact]
    public async Task EmptyKeyIsInvalidArgumentWithTheFieldAndNothingIsApplied()
    {
        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, [
            HyderOperation.Put(Of("applied?"), Of("1")),
            HyderOperation.Put([], Of("2")),
        ]));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("operations[1].key is empty", e.Message, StringComparison.Ordinal);
        Assert.Null(Engine.Peek(Of("applied?")));
    }

    [Theory]
    [InlineData("negative limit", "operations[0].limit is negative")]
    [InlineData("limit over the maximum", "operations[0].limit 501 is over the limit of 500")]
    [InlineData("too many operations", "65 operations exceed the limit of 64")]
    [InlineData("no operations", "at least one operation")]
    [InlineData("key too long", "operations[0].key is 2000 bytes, over the limit of 1024")]
    [InlineData("value too long", "operations[0].value is 70000 bytes, over the limit of 65536")]
    public async Task MalformedOneShotRequestsAreInvalidArgumentWithAReason(string what, string reason)
    {
        HyderOperation[] operations = what switch
        {
            "negative limit" => [HyderOperation.Scan(null, null, -1)],
            "limit over the maximum" => [HyderOperation.Scan(null, null, 501)],
            "too many operations" => Enumerable.Range(0, 65).Select(i => HyderOperation.Put(Of($"k{i}"), Of("v"))).ToArray(),
            "no operations" => [],
            "key too long" => [HyderOperation.Get(new byte[2000])],
            _ => [HyderOperation.Put(Of("k"), new byte[70000])],
        };

        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, operations));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains(reason, e.Message, StringComparison.Ordinal);
        Assert.Null(Engine.Peek(Of("k0")));
        Assert.Equal(0, Engine.Committed);
    }

    [Fact]
    public async Task UnknownEnumValuesAreInvalidArgument()
    {
        using var channel = Grpc.Net.Client.GrpcChannel.ForAddress(_server.Server.Address);
        var stub = new V1.Hyder.HyderClient(channel);
        var badIsolation = new V1.ExecuteRequest { Isolation = (V1.IsolationLevel)42 };
        badIsolation.Operations.Add(new V1.Operation { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8("k"), Value = ByteString.CopyFromUtf8("v") });
        var e = await Assert.ThrowsAsync<RpcException>(async () => await stub.ExecuteAsync(badIsolation));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Equal("unknown isolation level 42", e.Status.Detail);

        var badKind = new V1.ExecuteRequest();
        badKind.Operations.Add(new V1.Operation { Kind = (V1.OperationKind)9, Key = ByteString.CopyFromUtf8("k") });
        e = await Assert.ThrowsAsync<RpcException>(async () => await stub.ExecuteAsync(badKind));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Equal("operations[0].kind: unknown operation kind 9", e.Status.Detail);
        Assert.Null(Engine.Peek(Of("k")));
    }

    [Fact]
    public async Task TransactThatDoesNotStartWithBeginIsInvalidArgument()
    {
        using var channel = Grpc.Net.Client.GrpcChannel.ForAddress(_server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).Transact();
        var put = new V1.Operation { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8("k"), Value = ByteString.CopyFromUtf8("v") };
        await call.RequestStream.WriteAsync(new V1.TransactRequest { Operation = put });
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Equal("the first message of Transact must be begin, not operation", e.Status.Detail);
        Assert.Null(Engine.Peek(Of("k")));
    }

    [Fact]
    public async Task AfterTheOutcomeTheCallEndsOnlyOnceTheClientHasEndedItsRequestStream()
    {
        // The server waits for the client's end of stream instead of returning with the request
        // stream open, which Kestrel answers with a reset (many of them: ENHANCE_YOUR_CALM).
        using var channel = Grpc.Net.Client.GrpcChannel.ForAddress(_server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).Transact();
        await call.RequestStream.WriteAsync(new V1.TransactRequest { Begin = new V1.BeginRequest() });
        Assert.True(await call.ResponseStream.MoveNext());
        var put = new V1.Operation { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8("k"), Value = ByteString.CopyFromUtf8("v") };
        await call.RequestStream.WriteAsync(new V1.TransactRequest { Operation = put });
        Assert.True(await call.ResponseStream.MoveNext());
        await call.RequestStream.WriteAsync(new V1.TransactRequest { Commit = new V1.CommitRequest() });
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactionStatus.Committed, call.ResponseStream.Current.Outcome.Status);

        // Not for ordering: a window in which the call must stay open while the request stream is.
        var end = call.ResponseStream.MoveNext();
        await Task.Delay(TimeSpan.FromMilliseconds(300));
        Assert.False(end.IsCompleted, "the server ended the call before the client ended its request stream");

        await call.RequestStream.CompleteAsync();
        Assert.False(await end.WaitAsync(TimeSpan.FromSeconds(30)));
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    [Fact]
    public async Task RefusedOperationEndsTheInteractiveTransactionAndAbortsIt()
    {
        await using var tx = await Client.BeginAsync();
        await tx.PutAsync(Of("before"), Of("1"));
        var e = await Assert.ThrowsAsync<HyderException>(() => tx.PutAsync([], Of("2")));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("operation.key is empty", e.Message, StringComparison.Ordinal);
        Assert.False(tx.IsActive);
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.CommitAsync());
        Assert.Null(Engine.Peek(Of("before")));
    }

    [Fact]
    public async Task BadReadAndScanRequestsAreInvalidArgument()
    {
        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ReadAsync([Of("a"), []]));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("keys[1] is empty", e.Message, StringComparison.Ordinal);

        e = await Assert.ThrowsAsync<HyderException>(async () => await Client.ScanAsync(null, null, -5).ToListAsync());
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains("limit is negative", e.Message, StringComparison.Ordinal);

        e = await Assert.ThrowsAsync<HyderException>(() => Client.GetStateHashAsync(-1));
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
    }

    [Fact]
    public async Task MessageOverTheEnginesLimitIsResourceExhausted()
    {
        // 300 KiB in one message: over the fake's MaxMessageBytes (256 KiB), which ApplyLimits gave the server.
        var operations = Enumerable.Range(0, 5).Select(i => HyderOperation.Put(Of($"big{i}"), new byte[60 * 1024]));
        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, operations));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
        Assert.Null(Engine.Peek(Of("big0")));
    }

    [Theory]
    [InlineData(EngineErrorCode.InvalidArgument, StatusCode.InvalidArgument)]
    [InlineData(EngineErrorCode.ResourceExhausted, StatusCode.ResourceExhausted)]
    [InlineData(EngineErrorCode.Unavailable, StatusCode.Unavailable)]
    [InlineData(EngineErrorCode.FailedPrecondition, StatusCode.FailedPrecondition)]
    public async Task EngineRefusalsMapToTheirStatusWithTheReason(EngineErrorCode code, StatusCode expected)
    {
        // Checkpoint: a call the client never retries, so UNAVAILABLE reaches the caller too.
        Engine.FailNext(new EngineException(code, $"the engine says {code}"));
        var e = await Assert.ThrowsAsync<HyderException>(() => Client.CheckpointAsync());
        Assert.Equal(expected, e.StatusCode);
        Assert.Equal($"the engine says {code}", e.Message);
    }

    [Fact]
    public async Task UnexpectedFailureIsInternalWithoutLeakingIt()
    {
        Engine.FailNext(new InvalidOperationException("secret connection string"));
        var e = await Assert.ThrowsAsync<HyderException>(() => Client.CheckpointAsync());
        Assert.Equal(StatusCode.Internal, e.StatusCode);
        Assert.DoesNotContain("secret", e.Message, StringComparison.Ordinal);

        Engine.FailNext(new InvalidOperationException("secret"));
        e = await Assert.ThrowsAsync<HyderException>(() => Client.BeginAsync());
        Assert.Equal(StatusCode.Internal, e.StatusCode);
        Assert.DoesNotContain("secret", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AdmissionControlRefusesWithResourceExhaustedWhileCommitsAreInFlight()
    {
        Engine.InFlightLimit = 1;
        Engine.CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var first = Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("first"), Of("1"))]);
        while ((await Client.GetStatusAsync()).InFlight == 0)
        {
            await Task.Delay(5);
        }

        var e = await Assert.ThrowsAsync<HyderException>(() => Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("second"), Of("2"))]));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);

        Engine.CommitGate.SetResult();
        await first;
        Assert.Equal("1", Text(Engine.Peek(Of("first"))));
        Assert.Null(Engine.Peek(Of("second")));
    }

    [Fact]
    public async Task DeadlineIsDeadlineExceeded()
    {
        await using var server = await TestServer.StartAsync(configure: s => s with { Timeout = TimeSpan.FromMilliseconds(300) });
        var e = await Assert.ThrowsAsync<HyderException>(() => server.Client.GetStateHashAsync(atLeastOrdinal: 1_000_000));
        Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
    }

    [Fact]
    public async Task CancellationIsOperationCanceled()
    {
        using var cts = new CancellationTokenSource(TimeSpan.FromMilliseconds(200));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => Client.GetStateHashAsync(atLeastOrdinal: 1_000_000, cts.Token));
    }

    [Fact]
    public async Task CancellingACommitEndsTheTransactionAndNothingIsApplied()
    {
        Engine.CommitGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        await using var tx = await Client.BeginAsync();
        await tx.PutAsync(Of("cancelled"), Of("1"));
        using var cts = new CancellationTokenSource(TimeSpan.FromMilliseconds(200));
        await Assert.ThrowsAnyAsync<OperationCanceledException>(() => tx.CommitAsync(cts.Token));
        Assert.False(tx.IsActive);
        while ((await Client.GetStatusAsync()).InFlight != 0)
        {
            await Task.Delay(5);
        }

        Engine.CommitGate.SetResult();
        Assert.Null(Engine.Peek(Of("cancelled")));
    }
}
