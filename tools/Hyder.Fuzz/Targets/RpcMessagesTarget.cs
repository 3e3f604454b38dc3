using System.IO.Pipelines;
using Google.Protobuf;
using Hyder.Client;
using Hyder.Fuzz.Engine;
using Hyder.Rpc;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using V1 = Hyder.Api.V1;

namespace Hyder.Fuzz.Targets;

/// <summary>Which message stream of which method a seed is.</summary>
/// <param name="Method">The method's name in hyder.proto.</param>
/// <param name="Server">True: requests as the server reads them; false: responses as the client reads them.</param>
internal sealed record RpcSeed(string Method, bool Server);

/// <summary>
/// gRPC message streams of the hyder.v1.Hyder service, through a pipe in socket-sized chunks.
/// Server side: Hyder.Rpc's <see cref="MessageFraming"/> as ServerCall reads a unary request (one
/// message, then the end) or Transact's request stream, then <see cref="HyderService"/>'s checks and
/// mappings (Messages) on an engine that commits everything. Client side: the response messages
/// and Hyder.Client's Wire mappings (outcomes to exceptions, results, rows).
/// </summary>
internal sealed class RpcMessagesTarget : FuzzTarget
{
    private const int MaxMessageBytes = 64 * 1024;
    private readonly HyderService _service = new(new FakeEngine());

    public override string Name => "rpc-messages";

    public override string Description => "MessageFraming.ReadAsync with every hyder.proto request and response parser; HyderService's request checks (Messages); Hyder.Client's Wire mappings";

    // RpcException: a framing or protobuf fault (the call ends with INTERNAL or RESOURCE_EXHAUSTED);
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
        var ct = CancellationToken.None;
        switch (method)
        {
            case "Execute":
                Respond(await _service.ExecuteAsync(await ReadSingleAsync(reader, V1.ExecuteRequest.Parser).ConfigureAwait(false), ct).ConfigureAwait(false));
                break;
            case "Read":
                Respond(await _service.ReadAsync(await ReadSingleAsync(reader, V1.ReadRequest.Parser).ConfigureAwait(false), ct).ConfigureAwait(false));
                break;
            case "Scan":
                await _service.ScanAsync(await ReadSingleAsync(reader, V1.ScanRequest.Parser).ConfigureAwait(false), new Sink<V1.ScanResponse>(), ct).ConfigureAwait(false);
                break;
            case "StateHash":
                Respond(await _service.StateHashAsync(await ReadSingleAsync(reader, V1.StateHashRequest.Parser).ConfigureAwait(false), ct).ConfigureAwait(false));
                break;
            case "Status":
                Respond(await _service.StatusAsync(await ReadSingleAsync(reader, V1.StatusRequest.Parser).ConfigureAwait(false), ct).ConfigureAwait(false));
                break;
            default:
                await _service.TransactAsync(ReadAllAsync(reader, V1.TransactRequest.Parser), new Sink<V1.TransactResponse>(), ct).ConfigureAwait(false);
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

    /// <summary>ServerCall.ReadSingleAsync: one message, then the end of the stream.</summary>
    private static async Task<T> ReadSingleAsync<T>(PipeReader reader, MessageParser<T> parser)
        where T : class, IMessage<T>
    {
        var message = await MessageFraming.ReadAsync(reader, parser, MaxMessageBytes, CancellationToken.None).ConfigureAwait(false)
            ?? throw new RpcException(StatusCode.Internal, "The request stream ended without a message.");
        if (await MessageFraming.ReadAsync(reader, parser, MaxMessageBytes, CancellationToken.None).ConfigureAwait(false) is not null)
        {
            throw new RpcException(StatusCode.Internal, "More than one request message for a method that takes one.");
        }

        return message;
    }

    private static async IAsyncEnumerable<T> ReadAllAsync<T>(PipeReader reader, MessageParser<T> parser)
        where T : class, IMessage<T>
    {
        while (await MessageFraming.ReadAsync(reader, parser, MaxMessageBytes, CancellationToken.None).ConfigureAwait(false) is { } message)
        {
            yield return message;
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

    /// <summary>Messages framed as MessageFraming.Write frames them, with each prefix's length and the message's first varints marked.</summary>
    private static Seed Framed(string method, bool server, params IMessage[] messages)
    {
        var bytes = new List<byte>();
        var fields = new List<Field>();
        foreach (var message in messages)
        {
            var writer = new System.Buffers.ArrayBufferWriter<byte>();
            MessageFraming.Write(writer, message, MaxMessageBytes);
            fields.Add(new(bytes.Count, 1, FieldKind.UInt, "compressed flag"));
            fields.Add(new(bytes.Count + 1, 4, FieldKind.UIntBigEndian, "message length"));
            fields.Add(new(bytes.Count + 6, 0, FieldKind.Varint, "first field's value or length"));
            bytes.AddRange(writer.WrittenSpan.ToArray());
        }

        return new Seed($"{method} {(server ? "requests" : "responses")}", [.. bytes], fields, new RpcSeed(method, server));
    }

    private sealed class Sink<T> : IResponseStream<T>
        where T : IMessage
    {
        public Task WriteAsync(T message)
        {
            message.CalculateSize();
            return Task.CompletedTask;
        }
    }
}
