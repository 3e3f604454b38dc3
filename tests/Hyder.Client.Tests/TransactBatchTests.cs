using System.Collections.Concurrent;
using Google.Protobuf;
using Grpc.Core;
using Grpc.Core.Interceptors;
using Grpc.Net.Client;
using Hyder.Security;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests;

/// <summary>
/// Batches in <c>Transact</c>: the client's <see cref="HyderTransaction.Batch"/> scope sends what it
/// held as one message, and the server checks a whole batch before it runs any of it, answers it in
/// order (in more than one message when the answers are large) and, on a failure, answers what ran.
/// </summary>
public sealed class TransactBatchTests : IAsyncLifetime
{
    private TestServer _server = null!;
    private GrpcChannel _channel = null!;
    private Recorder _recorder = null!;
    private HyderClient _client = null!;

    private FakeEngine Engine => _server.Engine;

    public async Task InitializeAsync()
    {
        _server = await TestServer.StartAsync();
        (_channel, _recorder, _client) = Recorded(_server, batch: true);
    }

    public async Task DisposeAsync()
    {
        await _client.DisposeAsync();
        _channel.Dispose();
        await _server.DisposeAsync();
    }

    [Fact]
    public async Task OperationsIssuedInAScopeTravelAsOneMessageAndComeBackInOne()
    {
        await _server.Client.ExecuteAsync(IsolationLevel.Serializable, Enumerable.Range(0, 8).Where(i => i != 5).Select(i => HyderOperation.Put(Of($"k{i}"), Of($"v{i}"))));
        await using var tx = await _client.BeginAsync();
        _recorder.Clear();

        Task<byte[]?>[] reads;
        using (tx.Batch())
        {
            reads = [.. Enumerable.Range(0, 8).Select(i => tx.GetAsync(Of($"k{i}")))];
            Assert.All(reads, r => Assert.False(r.IsCompleted));
        }

        var values = await Task.WhenAll(reads);
        Task[] writes;
        Task<CommitResult> commit;
        using (tx.Batch())
        {
            writes = [tx.PutAsync(Of("k0"), Of("new0")), tx.PutAsync(Of("k5"), Of("new5"))];
            commit = tx.CommitAsync();
        }

        await Task.WhenAll(writes);
        await commit;

        Assert.Equal(["v0", "v1", "v2", "v3", "v4", "<absent>", "v6", "v7"], values.Select(Text));
        Assert.Equal("new0", Text(Engine.Peek(Of("k0"))));
        Assert.Equal("new5", Text(Engine.Peek(Of("k5"))));
        Assert.Equal(["batch(8 operation)", "batch(2 operation, commit)"], _recorder.Sent);
        Assert.Equal(["batch(8 result)", "batch(2 result, outcome)"], _recorder.Received);
    }

    [Fact]
    public async Task WithBatchingOffEveryRequestTravelsAloneAndTheAnswersAreTheSame()
    {
        var (channel, recorder, client) = Recorded(_server, batch: false);
        using (channel)
        await using (client)
        {
            await using var tx = await client.BeginAsync();
            recorder.Clear();
            Task[] operations;
            using (tx.Batch())
            {
                operations = [tx.PutAsync(Of("a"), Of("1")), tx.GetAsync(Of("a")), tx.CommitAsync()];
            }

            await Task.WhenAll(operations);

            Assert.Equal("1", Text(await (Task<byte[]?>)operations[1]));
            Assert.Equal(["operation", "operation", "commit"], recorder.Sent);
            Assert.Equal(["result", "result", "outcome"], recorder.Received);
            Assert.Equal("1", Text(Engine.Peek(Of("a"))));
        }
    }

    [Fact]
    public async Task NestedScopesSendWhenTheOutermostEnds()
    {
        await using var tx = await _client.BeginAsync();
        _recorder.Clear();
        Task put;
        Task<byte[]?> get;
        using (tx.Batch())
        {
            using (tx.Batch())
            {
                put = tx.PutAsync(Of("n"), Of("1"));
            }

            await Task.Delay(50);
            Assert.False(put.IsCompleted);
            get = tx.GetAsync(Of("n"));
        }

        await put;
        Assert.Equal("1", Text(await get));
        Assert.Equal(["batch(2 operation)"], _recorder.Sent);
    }

    [Fact]
    public async Task LargeAnswersAreSplitAcrossMessagesAndLargeRequestsGoOutInSeveral()
    {
        // The fake engine's limit is 256 KiB a message; each side keeps a batch to half of that, so
        // two 60 KiB values share a message and a third does not.
        var big = Enumerable.Range(0, 3).Select(i => Enumerable.Repeat((byte)('a' + i), 60 * 1024).ToArray()).ToArray();
        await using var tx = await _client.BeginAsync();
        _recorder.Clear();
        Task[] puts;
        using (tx.Batch())
        {
            puts = [.. big.Select((v, i) => tx.PutAsync(Of($"big{i}"), v))];
        }

        await Task.WhenAll(puts);
        Assert.Equal(["batch(2 operation)", "operation"], _recorder.Sent);

        _recorder.Clear();
        Task<byte[]?>[] gets;
        using (tx.Batch())
        {
            gets = [.. Enumerable.Range(0, 3).Select(i => tx.GetAsync(Of($"big{i}")))];
        }

        var values = await Task.WhenAll(gets);
        Assert.Equal(big, values);
        Assert.Equal(["batch(3 operation)"], _recorder.Sent);
        Assert.Equal(["batch(2 result)", "batch(1 result)"], _recorder.Received);
    }

    [Fact]
    public async Task APipelinedBeginTravelsWithTheFirstBatchAndTheWholeTransactionIsTwoMessages()
    {
        await _server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("s"), Of("1"))]);
        _recorder.Clear();
        await using var tx = _client.BeginPipelined(IsolationLevel.SnapshotIsolation);
        Assert.Equal(0, tx.SnapshotSequence);
        Assert.Equal(IsolationLevel.SnapshotIsolation, tx.Isolation);

        Task<byte[]?> read;
        using (tx.Batch())
        {
            read = tx.GetAsync(Of("s"));
        }

        Assert.Equal("1", Text(await read));
        Assert.True(tx.SnapshotSequence > 0);
        Task<CommitResult> commit;
        using (tx.Batch())
        {
            _ = tx.PutAsync(Of("s"), Of("2"));
            commit = tx.CommitAsync();
        }

        await commit;
        Assert.Equal("2", Text(Engine.Peek(Of("s"))));
        Assert.Equal(["batch(begin, operation)", "batch(operation, commit)"], _recorder.Sent);
        Assert.Equal(["batch(begun, result)", "batch(result, outcome)"], _recorder.Received);
    }

    [Fact]
    public async Task ARefusedPipelinedBeginFailsTheOperationsSentWithItAndNothingIsApplied()
    {
        await using var tx = _client.BeginPipelined();
        Engine.FailNext(new EngineException(EngineErrorCode.Unavailable, "not serving yet"));
        Task<byte[]?> read;
        Task write;
        using (tx.Batch())
        {
            read = tx.GetAsync(Of("b"));
            write = tx.PutAsync(Of("b"), Of("1"));
        }

        var e = await Assert.ThrowsAsync<HyderException>(() => read);
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        Assert.Contains("not serving yet", e.Message, StringComparison.Ordinal);
        Assert.Equal(StatusCode.Unavailable, (await Assert.ThrowsAsync<HyderException>(() => write)).StatusCode);
        Assert.False(tx.IsActive);
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.CommitAsync());
        Assert.Null(Engine.Peek(Of("b")));
    }

    [Fact]
    public async Task APipelinedTransactionDisposedBeforeAnythingWasSentLeavesNothingBehind()
    {
        var tx = _client.BeginPipelined();
        await tx.DisposeAsync();

        Assert.False(tx.IsActive);
        await Assert.ThrowsAsync<InvalidOperationException>(() => tx.GetAsync(Of("x")));
        await using var next = await _client.BeginAsync();
        Assert.Null(await next.GetAsync(Of("x")));
        Assert.Equal(0, Engine.InFlight);
    }

    [Fact]
    public async Task APipelinedTransactionsCallCarriesTheNextOneAfterACleanOutcome()
    {
        _recorder.Clear();
        for (var i = 0; i < 3; i++)
        {
            await using var tx = _client.BeginPipelined();
            Task<byte[]?> read;
            using (tx.Batch())
            {
                read = tx.GetAsync(Of("r"));
                _ = tx.PutAsync(Of("r"), Of($"{i}"));
            }

            Assert.Equal(i == 0 ? "<absent>" : $"{i - 1}", Text(await read));
            if (i == 2)
            {
                await tx.AbortAsync();
            }
            else
            {
                await tx.CommitAsync();
            }
        }

        Assert.Equal(1, _recorder.Calls);
        Assert.Equal(1, _client.IdleTransacts);
        Assert.Equal("1", Text(Engine.Peek(Of("r"))));

        // A failed transaction's call (the kept one) is not kept again: the next transaction gets a new one.
        await using (var failing = _client.BeginPipelined())
        {
            await Assert.ThrowsAsync<HyderException>(() => failing.PutAsync([], Of("x")));
        }

        Assert.Equal(0, _client.IdleTransacts);
        await using (var next = _client.BeginPipelined())
        {
            await next.PutAsync(Of("r"), Of("after"));
            await next.CommitAsync();
        }

        Assert.Equal(2, _recorder.Calls);
        Assert.Equal("after", Text(Engine.Peek(Of("r"))));
    }

    [Fact]
    public async Task AServerThatStopsEndsTheCallsWaitingBetweenTransactionsAndTheNextOneSaysNothingRan()
    {
        await using var server = await TestServer.StartAsync();
        var (channel, recorder, client) = Recorded(server, batch: true);

        // The stop may take longer than the 2 s a call is kept for on a loaded machine: here it is kept.
        client.IdleTransactLimit = TimeSpan.FromMinutes(1);
        using (channel)
        await using (client)
        {
            await using (var tx = client.BeginPipelined())
            {
                await tx.PutAsync(Of("s"), Of("1"));
                await tx.CommitAsync();
            }

            Assert.Equal(1, client.IdleTransacts);
            using var stopWithin = new CancellationTokenSource(TimeSpan.FromSeconds(20));
            await server.Server.StopAsync(stopWithin.Token);

            await using var after = client.BeginPipelined();
            var e = await Assert.ThrowsAsync<HyderException>(() => after.PutAsync(Of("s"), Of("2")));
            Assert.Equal(StatusCode.Unavailable, e.StatusCode);
            Assert.Equal(1, recorder.Calls);
            Assert.Equal("1", Text(server.Engine.Peek(Of("s"))));
        }
    }

    [Fact]
    public async Task APipelinedTransactionPastItsTimeoutFailsWithDeadlineExceededAndItsCallIsNotKept()
    {
        var (channel, recorder, client) = Recorded(_server, batch: true, timeout: TimeSpan.FromMilliseconds(500));
        using (channel)
        await using (client)
        {
            Engine.OperationGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
            await using (var tx = client.BeginPipelined())
            {
                var e = await Assert.ThrowsAsync<HyderException>(() => tx.GetAsync(Engine.GatedKey));
                Assert.Equal(StatusCode.DeadlineExceeded, e.StatusCode);
                Assert.False(tx.IsActive);
            }

            Engine.OperationGate.SetResult();
            Assert.Equal(0, client.IdleTransacts);
            await using (var next = client.BeginPipelined())
            {
                await next.PutAsync(Of("d"), Of("1"));
                await next.CommitAsync();
            }

            Assert.Equal(2, recorder.Calls);
        }
    }

    [Fact]
    public async Task OneCallCarriesTransactionsOneAfterAnotherAndEndsWhenTheClientEndsIt()
    {
        using var call = new V1.Hyder.HyderClient(_channel).Transact();
        await call.RequestStream.WriteAsync(Batch(Begin(), Put("one", "1"), Commit()));
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactionStatus.Committed, call.ResponseStream.Current.Batch.Responses[2].Outcome.Status);

        await call.RequestStream.WriteAsync(Begin());
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactResponse.ResponseOneofCase.Begun, call.ResponseStream.Current.ResponseCase);
        await call.RequestStream.WriteAsync(Get("one"));
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal("1", call.ResponseStream.Current.Result.Value.ToStringUtf8());
        await call.RequestStream.WriteAsync(Batch(Put("two", "2"), Commit()));
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactionStatus.Committed, call.ResponseStream.Current.Batch.Responses[1].Outcome.Status);

        // After an outcome only a begin may come.
        await call.RequestStream.WriteAsync(Get("one"));
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Equal("the first message of Transact must be begin, not operation", e.Status.Detail);
        Assert.Equal("2", Text(Engine.Peek(Of("two"))));
        Assert.Equal(2, Engine.Committed);
    }

    [Fact]
    public async Task AWholeTransactionInOneBatchIsAnsweredInOrderWithTheValuesReadBeforeTheCommit()
    {
        var stub = new V1.Hyder.HyderClient(_channel);
        using var call = stub.Transact();
        await call.RequestStream.WriteAsync(Batch(Begin(), Put("w", "1"), Get("w"), Get("absent"), Commit()));
        await call.RequestStream.CompleteAsync();

        // The read's value is the transaction's until it ends: its answer leaves before the commit runs.
        Assert.True(await call.ResponseStream.MoveNext());
        var answers = call.ResponseStream.Current.Batch.Responses;
        Assert.Equal(
            [V1.TransactResponse.ResponseOneofCase.Begun, V1.TransactResponse.ResponseOneofCase.Result, V1.TransactResponse.ResponseOneofCase.Result, V1.TransactResponse.ResponseOneofCase.Result],
            answers.Select(a => a.ResponseCase));
        Assert.Equal("1", answers[2].Result.Value.ToStringUtf8());
        Assert.False(answers[3].Result.Found);
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactionStatus.Committed, Assert.Single(call.ResponseStream.Current.Batch.Responses).Outcome.Status);
        Assert.False(await call.ResponseStream.MoveNext());
        Assert.Equal("1", Text(Engine.Peek(Of("w"))));

        // Without a value among the answers, the outcome shares their message.
        using var blind = stub.Transact();
        await blind.RequestStream.WriteAsync(Batch(Begin(), Put("w", "2"), Get("absent"), Commit()));
        await blind.RequestStream.CompleteAsync();
        Assert.True(await blind.ResponseStream.MoveNext());
        Assert.Equal(4, blind.ResponseStream.Current.Batch.Responses.Count);
        Assert.False(await blind.ResponseStream.MoveNext());
    }

    public static TheoryData<string, string> Malformed => new()
    {
        { "empty", "batch: a batch holds at least one request" },
        { "nested", "batch.requests[1] is a batch: batches do not nest" },
        { "commit-not-last", "batch.requests[2] is commit, which must end its batch: nothing may follow it" },
        { "abort-not-last", "batch.requests[1] is abort, which must end its batch: nothing may follow it" },
        { "no-begin", "the first message of Transact must be begin, not operation" },
        { "second-begin", "batch.requests[2] is begin, which may only come first in a batch sent before the transaction has begun" },
        { "empty-request", "unexpected an empty request in a transaction that has begun" },
        { "bad-key", "operation.key is empty" },
        { "too-many", "the transaction exceeds the limit of 64 operations" },
    };

    [Theory]
    [MemberData(nameof(Malformed))]
    public async Task AMalformedBatchIsRefusedBeforeAnyOfItRuns(string shape, string reason)
    {
        var put = Put("m", "1");
        var requests = shape switch
        {
            "empty" => Batch(),
            "nested" => Batch(Begin(), Batch(put), Commit()),
            "commit-not-last" => Batch(Begin(), put, Commit(), Get("m")),
            "abort-not-last" => Batch(Begin(), new V1.TransactRequest { Abort = new V1.AbortRequest() }, Commit()),
            "no-begin" => Batch(put, Commit()),
            "second-begin" => Batch(Begin(), put, Begin(), Commit()),
            "empty-request" => Batch(Begin(), put, new V1.TransactRequest(), Commit()),
            "bad-key" => Batch(Begin(), put, new V1.TransactRequest { Operation = new V1.Operation { Kind = V1.OperationKind.Put, Value = ByteString.CopyFromUtf8("v") } }, Commit()),
            "too-many" => Batch([Begin(), .. Enumerable.Range(0, 65).Select(i => Put($"m{i}", "1")), Commit()]),
            _ => throw new ArgumentOutOfRangeException(nameof(shape)),
        };

        using var call = new V1.Hyder.HyderClient(_channel).Transact();
        await call.RequestStream.WriteAsync(requests);
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());

        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Contains(reason, e.Status.Detail, StringComparison.Ordinal);
        Assert.Null(Engine.Peek(Of("m")));
        Assert.Null(Engine.Peek(Of("m0")));
        Assert.Equal(0, Engine.Committed);
    }

    [Fact]
    public async Task ABatchAfterBeginIsCheckedAgainstTheOperationsAlreadyRun()
    {
        using var call = new V1.Hyder.HyderClient(_channel).Transact();
        await call.RequestStream.WriteAsync(Batch([Begin(), .. Enumerable.Range(0, 60).Select(i => Put($"m{i}", "1"))]));
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(61, call.ResponseStream.Current.Batch.Responses.Count);

        await call.RequestStream.WriteAsync(Batch([.. Enumerable.Range(60, 5).Select(i => Put($"m{i}", "1")), Commit()]));
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());

        Assert.Equal(StatusCode.InvalidArgument, e.StatusCode);
        Assert.Equal("the transaction exceeds the limit of 64 operations", e.Status.Detail);
        Assert.Equal(0, Engine.Committed);
        Assert.Null(Engine.Peek(Of("m0")));
    }

    [Fact]
    public async Task AFailureInsideABatchComesAfterTheAnswersOfWhatRanBeforeIt()
    {
        Engine.OperationGate = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        Engine.OperationGate.SetException(new EngineException(EngineErrorCode.FailedPrecondition, "the gate refused"));
        await using var tx = await _client.BeginAsync();
        _recorder.Clear();
        Task put;
        Task<byte[]?> read;
        Task<byte[]?> gated;
        Task<byte[]?> behind;
        using (tx.Batch())
        {
            put = tx.PutAsync(Of("p"), Of("1"));
            read = tx.GetAsync(Of("p"));
            gated = tx.GetAsync(Engine.GatedKey);
            behind = tx.GetAsync(Of("p"));
        }

        await put;
        Assert.Equal("1", Text(await read));
        var e = await Assert.ThrowsAsync<HyderException>(() => gated);
        Assert.Equal(StatusCode.FailedPrecondition, e.StatusCode);
        Assert.Contains("the gate refused", e.Message, StringComparison.Ordinal);
        await Assert.ThrowsAsync<HyderException>(() => behind);
        Assert.False(tx.IsActive);
        Assert.Equal(["batch(2 result)"], _recorder.Received);
        Assert.Null(Engine.Peek(Of("p")));
    }

    [Fact]
    public async Task AReaderIsRefusedABatchWithAWriteBeforeAnyOfItRuns()
    {
        var reader = ApiKeyStore.NewToken();
        var keys = new ApiKeyStore();
        keys.AddLine(ApiKeyStore.Line("reader-key", ClientRole.Reader, reader));
        var engine = new FakeEngine();
        await using var server = await HyderGrpcServer.StartAsync(engine, new GrpcServerOptions { Authenticator = new ClientAuthenticator { ApiKeys = keys } });
        await using var client = new HyderClient(new HyderClientSettings { Endpoint = server.Address, Token = reader, Timeout = TimeSpan.FromSeconds(10) });
        await using var tx = await client.BeginAsync();

        Task<byte[]?> read;
        Task write;
        using (tx.Batch())
        {
            read = tx.GetAsync(Of("r"));
            write = tx.PutAsync(Of("r"), Of("1"));
        }

        var e = await Assert.ThrowsAsync<HyderException>(() => read);
        Assert.Equal(StatusCode.PermissionDenied, e.StatusCode);
        Assert.Equal(StatusCode.PermissionDenied, (await Assert.ThrowsAsync<HyderException>(() => write)).StatusCode);
        Assert.Null(engine.Peek(Of("r")));
    }

    [Fact]
    public void TheConnectionStringTurnsBatchingOffAndRefusesAnythingButABoolean()
    {
        Assert.True(HyderClientSettings.Parse("Endpoint=http://127.0.0.1:1").BatchOperations);
        Assert.False(HyderClientSettings.Parse("Endpoint=http://127.0.0.1:1;BatchOperations=false").BatchOperations);
        var e = Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse("Endpoint=http://127.0.0.1:1;BatchOperations=sometimes"));
        Assert.Contains("BatchOperations=sometimes is not true or false", e.Message, StringComparison.OrdinalIgnoreCase);
    }

    private static (GrpcChannel Channel, Recorder Recorder, HyderClient Client) Recorded(TestServer server, bool batch, TimeSpan? timeout = null)
    {
        var channel = GrpcChannel.ForAddress(server.Server.Address, new GrpcChannelOptions { MaxReceiveMessageSize = 256 * 1024, MaxSendMessageSize = 256 * 1024 });
        var recorder = new Recorder();
        var settings = new HyderClientSettings { Endpoint = server.Server.Address, Timeout = timeout ?? TimeSpan.FromSeconds(10), MaxMessageBytes = 256 * 1024, BatchOperations = batch, MaxRetries = 0 };
        return (channel, recorder, new HyderClient(settings, new V1.Hyder.HyderClient(channel.Intercept(recorder))));
    }

    private static V1.TransactRequest Begin() => new() { Begin = new V1.BeginRequest() };

    private static V1.TransactRequest Commit() => new() { Commit = new V1.CommitRequest() };

    private static V1.TransactRequest Put(string key, string value) =>
        new() { Operation = new V1.Operation { Kind = V1.OperationKind.Put, Key = ByteString.CopyFromUtf8(key), Value = ByteString.CopyFromUtf8(value) } };

    private static V1.TransactRequest Get(string key) =>
        new() { Operation = new V1.Operation { Kind = V1.OperationKind.Get, Key = ByteString.CopyFromUtf8(key) } };

    private static V1.TransactRequest Batch(params V1.TransactRequest[] requests) =>
        new() { Batch = new V1.TransactRequestBatch { Requests = { requests } } };

    /// <summary>Records the kind of every <c>Transact</c> message after the begin, in each direction ("batch(2 result, outcome)").</summary>
    private sealed class Recorder : Interceptor
    {
        private readonly ConcurrentQueue<string> _sent = new();
        private readonly ConcurrentQueue<string> _received = new();
        private int _calls;

        public string[] Sent => [.. _sent];

        public string[] Received => [.. _received];

        /// <summary>How many <c>Transact</c> calls were made.</summary>
        public int Calls => Volatile.Read(ref _calls);

        public void Clear()
        {
            _sent.Clear();
            _received.Clear();
        }

        public override AsyncDuplexStreamingCall<TRequest, TResponse> AsyncDuplexStreamingCall<TRequest, TResponse>(ClientInterceptorContext<TRequest, TResponse> context, AsyncDuplexStreamingCallContinuation<TRequest, TResponse> continuation)
        {
            Interlocked.Increment(ref _calls);
            var call = continuation(context);
            return new AsyncDuplexStreamingCall<TRequest, TResponse>(
                new Writer<TRequest>(call.RequestStream, this),
                new Reader<TResponse>(call.ResponseStream, this),
                call.ResponseHeadersAsync,
                call.GetStatus,
                call.GetTrailers,
                call.Dispose);
        }

        private static string Describe(object message) => message switch
        {
            V1.TransactRequest { RequestCase: V1.TransactRequest.RequestOneofCase.Batch } r => Group(r.Batch.Requests.Select(q => Name(q.RequestCase.ToString()))),
            V1.TransactRequest r => Name(r.RequestCase.ToString()),
            V1.TransactResponse { ResponseCase: V1.TransactResponse.ResponseOneofCase.Batch } r => Group(r.Batch.Responses.Select(a => Name(a.ResponseCase.ToString()))),
            V1.TransactResponse r => Name(r.ResponseCase.ToString()),
            _ => message.GetType().Name,
        };

        private static string Name(string kind) => kind.ToLowerInvariant();

        /// <summary>"2 operation, commit": runs of one kind counted.</summary>
        private static string Group(IEnumerable<string> kinds)
        {
            var runs = new List<(string Kind, int Count)>();
            foreach (var kind in kinds)
            {
                if (runs.Count > 0 && runs[^1].Kind == kind)
                {
                    runs[^1] = (kind, runs[^1].Count + 1);
                }
                else
                {
                    runs.Add((kind, 1));
                }
            }

            return $"batch({string.Join(", ", runs.Select(r => r.Count == 1 && runs.Count > 1 ? r.Kind : $"{r.Count} {r.Kind}"))})";
        }

        private sealed class Writer<T>(IClientStreamWriter<T> inner, Recorder recorder) : IClientStreamWriter<T>
        {
            public WriteOptions? WriteOptions
            {
                get => inner.WriteOptions;
                set => inner.WriteOptions = value;
            }

            public Task WriteAsync(T message) => WriteAsync(message, CancellationToken.None);

            public Task WriteAsync(T message, CancellationToken cancellationToken)
            {
                if (message is V1.TransactRequest { RequestCase: not V1.TransactRequest.RequestOneofCase.Begin })
                {
                    recorder._sent.Enqueue(Describe(message!));
                }

                return inner.WriteAsync(message, cancellationToken);
            }

            public Task CompleteAsync() => inner.CompleteAsync();
        }

        private sealed class Reader<T>(IAsyncStreamReader<T> inner, Recorder recorder) : IAsyncStreamReader<T>
        {
            public T Current => inner.Current;

            public async Task<bool> MoveNext(CancellationToken cancellationToken)
            {
                var more = await inner.MoveNext(cancellationToken).ConfigureAwait(false);
                if (more && inner.Current is V1.TransactResponse { ResponseCase: not V1.TransactResponse.ResponseOneofCase.Begun })
                {
                    recorder._received.Enqueue(Describe(inner.Current!));
                }

                return more;
            }
        }
    }
}
