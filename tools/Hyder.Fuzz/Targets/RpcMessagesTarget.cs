using System.Buffers;
using System.Buffers.Binary;
using System.IO.Pipelines;
using Google.Protobuf;
using Grpc.Core;
using Hyder.Client;
using Hyder.Fuzz.Engine;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using V1 = Hyder.Api.V1;

namespace Hyder.Fuzz.Targets;

/// <summary>Which message stream of which method a seed is.</summary>
/// <param name="Method">The method's name in hyder.proto.</param>
/// <param name="Server">True: requests as the server reads them; false: responses as the client reads them.</param>
internal sealed record RpcSeed(string Method, bool Server);

/// <summary>
/// gRPC message streams of the hyder.v1.Hyder service, through a pipe in socket-sized chunks, split
/// at gRPC's 5-byte message prefixes and parsed by hyder.proto's generated parsers (Grpc.AspNetCore
/// and Grpc.Net.Client read frames the same way). Server side: a unary request (one message, then
/// the end) or Transact's request stream, into <see cref="HyderService"/>'s overrides, its checks
/// and mappings (Messages) on an engine that commits everything. Client side: the response messages
/// and Hyder.Client's Wire mappings (outcomes to exceptions, results, rows).
/// </summary>
internal sealed class RpcMessagesTarget : FuzzTarget
{
    private const int MaxMessageBytes = 64 * 1024;
    private readonly HyderService _service = new(new FakeEngine());

    public override string Name => "rpc-messages";

    public override string Description => "every hyder.proto request and response parser on framed messages; HyderService's request checks (Messages); Hyder.Client's Wire mappings";

    // RpcException: a framing or protobuf fault (the call ends with INTERNAL or RESOURCE_EXHAUSTED)
    // or a refusal of the service's own (PERMISSION_DENIED never: the fuzzer's caller is an admin);
    // EngineException: a request the service refuses (INVALID_ARGUMENT); HyderException and its
    // subclasses: what the client surfaces for an answer that is an abort or not an answer.
    public override IReadOnlyList<Type> Documented { get; } = [typeof(RpcException), typeof(EngineException), typeof(HyderException)];

    public override void Execute(byte[] input, Seed seed)
    {
        var rpc = (RpcSeed)seed.Context!;
        PipeFeed.Run(input, reader => rpc.Server ? ServeAsync(rpc.Method, reader) : AnswerAsync(rpc.Method, reader));
    }

    private async Task ServeAsync(string method, PipeReader reader)
    {
        var context = new FuzzCallContext(method);
        switch (method)
        {
            case "Execute":
                Respond(await _service.Execute(await ReadSingleAsync(reader, V1.ExecuteRequest.Parser).ConfigureAwait(false), context).ConfigureAwait(false));
                break;
            case "Read":
                Respond(await _service.Read(await ReadSingleAsync(reader, V1.ReadRequest.Parser).ConfigureAwait(false), context).ConfigureAwait(false));
                break;
            case "Scan":
                await _service.Scan(await ReadSingleAsync(reader, V1.ScanRequest.Parser).ConfigureAwait(false), new Sink<V1.ScanResponse>(), context).ConfigureAwait(false);
                break;
            case "StateHash":
                Respond(await _service.StateHash(await ReadSingleAsync(reader, V1.StateHashRequest.Parser).ConfigureAwait(false), context).ConfigureAwait(false));
                break;
            case "Status":
                Respond(await _service.Status(await ReadSingleAsync(reader, V1.StatusRequest.Parser).ConfigureAwait(false), context).ConfigureAwait(false));
                break;
            default:
                await _service.Transact(new Requests<V1.TransactRequest>(reader, V1.TransactRequest.Parser), new Sink<V1.TransactResponse>(), context).ConfigureAwait(false);
                break;
        }
    }

    private static async Task AnswerAsync(string method, PipeReader reader)
    {
        try
        {
            await MapAnswersAsync(method, reader).ConfigureAwait(false);
        }
        catch (Exception e) when (e is TransactionAbortedException or TransactionOutcomeUnknownException)
        {
            // A well-formed answer that says the transaction aborted: the client's normal result.
        }
    }

    private static async Task MapAnswersAsync(string method, PipeReader reader)
    {
        switch (method)
        {
            case "Execute":
                var execute = await ReadSingleAsync(reader, V1.ExecuteResponse.Parser).ConfigureAwait(false);
                Wire.EnsureCommitted(execute.Outcome);
                _ = execute.Results.Select(Wire.FromMessage).ToArray();
                break;
            case "Read":
                var read = await ReadSingleAsync(reader, V1.ReadResponse.Parser).ConfigureAwait(false);
                _ = read.Results.Select(r => r.Found ? r.Value.ToByteArray() : null).ToArray();
                break;
            case "Scan":
                await foreach (var batch in ReadAllAsync(reader, V1.ScanResponse.Parser).ConfigureAwait(false))
                {
                    Wire.Rows(batch.Rows);
                }

                break;
            default:
                await foreach (var response in ReadAllAsync(reader, V1.TransactResponse.Parser).ConfigureAwait(false))
                {
                    switch (response.ResponseCase)
                    {
                        case V1.TransactResponse.ResponseOneofCase.Result:
                            Wire.FromMessage(response.Result);
                            break;
                        case V1.TransactResponse.ResponseOneofCase.Outcome:
                            Wire.EnsureCommitted(response.Outcome);
                            break;
                    }
                }

                break;
        }
    }

    /// <summary>One message, then the end of the stream, as a unary call reads its request.</summary>
    private static async Task<T> ReadSingleAsync<T>(PipeReader reader, MessageParser<T> parser)
        where T : class, IMessage<T>
    {
        var message = await ReadFrameAsync(reader, parser).ConfigureAwait(false)
            ?? throw new RpcException(new Status(StatusCode.Internal, "The request stream ended without a message."));
        if (await ReadFrameAsync(reader, parser).ConfigureAwait(false) is not null)
        {
            throw new RpcException(new Status(StatusCode.Internal, "More than one request message for a method that takes one."));
        }

        return message;
    }

    private static async IAsyncEnumerable<T> ReadAllAsync<T>(PipeReader reader, MessageParser<T> parser)
        where T : class, IMessage<T>
    {
        while (await ReadFrameAsync(reader, parser).ConfigureAwait(false) is { } message)
        {
            yield return message;
        }
    }

    /// <summary>
    /// The next message: a compressed flag (0), a 4-byte big-endian length up to the limit, the
    /// message; null at the end. A fault is an RpcException as Grpc.AspNetCore's would be.
    /// </summary>
    private static async Task<T?> ReadFrameAsync<T>(PipeReader reader, MessageParser<T> parser)
        where T : class, IMessage<T>
    {
        while (true)
        {
            var read = await reader.ReadAsync().ConfigureAwait(false);
            var buffer = read.Buffer;
            if (buffer.Length >= 5)
            {
                var (compressed, length) = Prefix(buffer);
                if (compressed)
                {
                    throw new RpcException(new Status(StatusCode.Internal, "A compressed message without a negotiated encoding."));
                }

                if (length > MaxMessageBytes)
                {
                    throw new RpcException(new Status(StatusCode.ResourceExhausted, "Received message exceeds the maximum configured message size."));
                }

                if (buffer.Length >= 5 + length)
                {
                    var body = buffer.Slice(5, length);
                    T message;
                    try
                    {
                        message = parser.ParseFrom(body);
                    }
                    catch (InvalidProtocolBufferException e)
                    {
                        throw new RpcException(new Status(StatusCode.Internal, "Failed to deserialize a message.", e));
                    }

                    reader.AdvanceTo(body.End);
                    return message;
                }
            }

            if (read.IsCompleted)
            {
                if (buffer.Length > 0)
                {
                    throw new RpcException(new Status(StatusCode.Internal, "The stream ended inside a message."));
                }

                reader.AdvanceTo(buffer.End);
                return null;
            }

            reader.AdvanceTo(buffer.Start, buffer.End);
        }
    }

    private static void Respond(IMessage response) => response.CalculateSize();

    protected override IEnumerable<Seed> BuildCorpus()
    {
        var get = new V1.Operation { Kind = V1.OperationKind.Get, Key = Bytes("k1") };
        var put = new V1.Operation { Kind = V1.OperationKind.Put, Key = Bytes("k2"), Value = Bytes("value") };
        var delete = new V1.Operation { Kind = V1.OperationKind.Delete, Key = Bytes("k3") };
        var scan = new V1.Operation { Kind = V1.OperationKind.Scan, Key = Bytes("a"), End = Bytes("z"), Limit = 10 };
        var add = new V1.Operation { Kind = V1.OperationKind.Add, Key = Bytes("n"), Delta = -3, Min = 0, Max = 100 };
        var topK = new V1.Operation { Kind = V1.OperationKind.TopKInsert, Key = Bytes("t"), K = 3, Order = 7, Value = Bytes("x") };
        var execute = new V1.ExecuteRequest { Isolation = V1.IsolationLevel.SnapshotIsolation };
        execute.Operations.Add([get, put, delete, scan, add, topK]);
        var readRequest = new V1.ReadRequest();
        readRequest.Keys.Add([Bytes("k1"), Bytes("k2")]);
        var outcome = new V1.Outcome { Status = V1.TransactionStatus.Committed, Ordinal = 12, SnapshotSequence = 10 };
        var aborted = new V1.Outcome { Status = V1.TransactionStatus.Aborted, AbortCause = V1.AbortCause.WriteWrite, Detail = "conflict on k2", Ordinal = 13, SnapshotSequence = 10 };
        var result = new V1.OperationResult { Found = true, Value = Bytes("v") };
        result.Rows.Add(new V1.Row { Key = Bytes("a"), Value = Bytes("b") });
        var executeResponse = new V1.ExecuteResponse { Outcome = outcome };
        executeResponse.Results.Add([result, new V1.OperationResult()]);
        var readResponse = new V1.ReadResponse { SnapshotSequence = 4 };
        readResponse.Results.Add([result, new V1.OperationResult()]);
        var scanResponse = new V1.ScanResponse();
        scanResponse.Rows.Add([new V1.Row { Key = Bytes("a"), Value = Bytes("1") }, new V1.Row { Key = Bytes("b"), Value = Bytes("2") }]);

        yield return Framed("Execute", true, execute);
        yield return Framed("Read", true, readRequest);
        yield return Framed("Scan", true, new V1.ScanRequest { Low = Bytes("a"), High = Bytes("m"), Limit = 100, BatchSize = 10 });
        yield return Framed("StateHash", true, new V1.StateHashRequest { AtLeastOrdinal = 3 });
        yield return Framed("Status", true, new V1.StatusRequest());
        yield return Framed("Transact", true,
            new V1.TransactRequest { Begin = new V1.BeginRequest { Isolation = V1.IsolationLevel.Serializable } },
            new V1.TransactRequest { Operation = put },
            new V1.TransactRequest { Operation = scan },
            new V1.TransactRequest { Commit = new V1.CommitRequest() });
        yield return Framed("Execute", false, executeResponse);
        yield return Framed("Execute", false, new V1.ExecuteResponse { Outcome = aborted });
        yield return Framed("Read", false, readResponse);
        yield return Framed("Scan", false, scanResponse, scanResponse);
        yield return Framed("Transact", false,
            new V1.TransactResponse { Begun = new V1.BeginResponse { SnapshotSequence = 10 } },
            new V1.TransactResponse { Result = result },
            new V1.TransactResponse { Outcome = outcome });
    }

    private static ByteString Bytes(string text) => ByteString.CopyFromUtf8(text);

    private static (bool Compressed, uint Length) Prefix(ReadOnlySequence<byte> buffer)
    {
        Span<byte> prefix = stackalloc byte[5];
        buffer.Slice(0, 5).CopyTo(prefix);
        return (prefix[0] != 0, BinaryPrimitives.ReadUInt32BigEndian(prefix[1..]));
    }

    /// <summary>Messages framed as gRPC frames them, with each prefix's length and the message's first varints marked.</summary>
    private static Seed Framed(string method, bool server, params IMessage[] messages)
    {
        var bytes = new List<byte>();
        var fields = new List<Field>();
        foreach (var message in messages)
        {
            var writer = new ArrayBufferWriter<byte>();
            var size = message.CalculateSize();
            BinaryPrimitives.WriteUInt32BigEndian(writer.GetSpan(5)[1..5], (uint)size);
            writer.GetSpan(5)[0] = 0;
            writer.Advance(5);
            message.WriteTo(writer);
            fields.Add(new(bytes.Count, 1, FieldKind.UInt, "compressed flag"));
            fields.Add(new(bytes.Count + 1, 4, FieldKind.UIntBigEndian, "message length"));
            fields.Add(new(bytes.Count + 6, 0, FieldKind.Varint, "first field's value or length"));
            bytes.AddRange(writer.WrittenSpan.ToArray());
        }

        return new Seed($"{method} {(server ? "requests" : "responses")}", [.. bytes], fields, new RpcSeed(method, server));
    }

    private sealed class Sink<T> : IServerStreamWriter<T>
        where T : IMessage
    {
        public WriteOptions? WriteOptions { get; set; }

        public Task WriteAsync(T message)
        {
            message.CalculateSize();
            return Task.CompletedTask;
        }
    }

    private sealed class Requests<T>(PipeReader reader, MessageParser<T> parser) : IAsyncStreamReader<T>
        where T : class, IMessage<T>
    {
        public T Current { get; private set; } = null!;

        public async Task<bool> MoveNext(CancellationToken cancellationToken)
        {
            if (await ReadFrameAsync(reader, parser).ConfigureAwait(false) is { } message)
            {
                Current = message;
                return true;
            }

            return false;
        }
    }

    /// <summary>A call with no deadline, no peer and an admin caller (no interceptor runs).</summary>
    private sealed class FuzzCallContext(string method) : ServerCallContext
    {
        private readonly Metadata _trailers = [];
        private readonly Dictionary<object, object> _userState = [];

        protected override string MethodCore => $"/hyder.v1.Hyder/{method}";

        protected override string HostCore => "fuzz";

        protected override string PeerCore => "fuzz";

        protected override DateTime DeadlineCore => DateTime.MaxValue;

        protected override Metadata RequestHeadersCore => [];

        protected override CancellationToken CancellationTokenCore => CancellationToken.None;

        protected override Metadata ResponseTrailersCore => _trailers;

        protected override Status StatusCore { get; set; }

        protected override WriteOptions? WriteOptionsCore { get; set; }

        protected override AuthContext AuthContextCore => new(null, []);

        protected override IDictionary<object, object> UserStateCore => _userState;

        protected override ContextPropagationToken CreatePropagationTokenCore(ContextPropagationOptions? options) => throw new NotSupportedException();

        protected override Task WriteResponseHeadersAsyncCore(Metadata responseHeaders) => Task.CompletedTask;
    }
}
