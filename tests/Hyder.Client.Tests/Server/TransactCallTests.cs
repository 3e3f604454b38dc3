using Grpc.Core;
using Grpc.Net.Client;
using Xunit;
using static Hyder.Client.Tests.Bytes;
using static Hyder.Client.Tests.Server.ExecuteStreamTests;
using V1 = Hyder.Api.V1;

namespace Hyder.Client.Tests.Server;

/// <summary>
/// The server's <c>Transact</c> through the generated stub, several transactions on one call: the
/// call reuses its answer messages, and each answer still says only what its own request did.
/// </summary>
public sealed class TransactCallTests
{
    [Fact]
    public async Task TransactionsOneAfterAnotherOnACallAreEachAnsweredWithTheirOwnResultsAndOutcome()
    {
        var engine = new FakeEngine();
        await using var server = await TestServer.StartAsync(engine);
        await server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("k1"), Of("v1")), HyderOperation.Put(Of("k2"), Of("v2"))]);

        using var channel = GrpcChannel.ForAddress(server.Server.Address);
        using var call = new V1.Hyder.HyderClient(channel).Transact();

        // A read that finds a value, one that does not, a scan, a write, and the commit.
        var scan = new V1.Operation { Kind = V1.OperationKind.Scan, Key = Google.Protobuf.ByteString.CopyFromUtf8("k"), End = Google.Protobuf.ByteString.CopyFromUtf8("l") };
        var first = await ExchangeAsync(call, Begin(), Operation(Get("k1")), Operation(Get("absent")), Operation(scan), Operation(Put("k3", "v3")), Commit());
        Assert.Equal(V1.TransactResponse.ResponseOneofCase.Begun, first[0].ResponseCase);
        AssertResult(first[1], "v1");
        AssertResult(first[2], null);
        Assert.Equal(["k1=v1", "k2=v2"], first[3].Result.Rows.Select(r => $"{r.Key.ToStringUtf8()}={r.Value.ToStringUtf8()}"));
        Assert.True(first[4].Result.Value.IsEmpty && first[4].Result.Rows.Count == 0, first[4].ToString());
        Assert.Equal(V1.TransactionStatus.Committed, first[5].Outcome.Status);
        Assert.True(first[5].Outcome.Ordinal > 0, first[5].ToString());
        Assert.Equal("v3", Text(engine.Peek(Of("k3"))));

        // The client aborts: no ordinal, whatever the commit before it on the call had.
        var second = await ExchangeAsync(call, Begin(), Operation(Get("k2")), new V1.TransactRequest { Abort = new V1.AbortRequest() });
        AssertResult(second[1], "v2");
        Assert.Equal(V1.TransactionStatus.Aborted, second[2].Outcome.Status);
        Assert.Equal(0, second[2].Outcome.Ordinal);
        Assert.Equal("aborted by the client", second[2].Outcome.Detail);

        // Reads that find nothing carry no value or rows left over from the earlier transactions' answers.
        var third = await ExchangeAsync(call, Begin(), Operation(Get("absent")), Operation(Get("also absent")), Operation(Get("k3")), Commit());
        AssertResult(third[1], null);
        AssertResult(third[2], null);
        AssertResult(third[3], "v3");
        Assert.Equal(V1.TransactionStatus.Committed, third[4].Outcome.Status);
        Assert.Equal(string.Empty, third[4].Outcome.Detail);

        // One request at a time: a lone read's answer too.
        await call.RequestStream.WriteAsync(Begin());
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Equal(V1.TransactResponse.ResponseOneofCase.Begun, call.ResponseStream.Current.ResponseCase);
        await call.RequestStream.WriteAsync(Operation(Get("k1")));
        Assert.True(await call.ResponseStream.MoveNext());
        AssertResult(call.ResponseStream.Current, "v1");
        await call.RequestStream.WriteAsync(Operation(Get("absent")));
        Assert.True(await call.ResponseStream.MoveNext());
        AssertResult(call.ResponseStream.Current, null);

        await call.RequestStream.CompleteAsync();
        Assert.False(await call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.OK, call.GetStatus().StatusCode);
    }

    /// <summary>Sends the requests as one batch and returns the answers, from however many batch responses carry them.</summary>
    private static async Task<List<V1.TransactResponse>> ExchangeAsync(AsyncDuplexStreamingCall<V1.TransactRequest, V1.TransactResponse> call, params V1.TransactRequest[] requests)
    {
        var batch = new V1.TransactRequestBatch();
        batch.Requests.Add(requests);
        await call.RequestStream.WriteAsync(new V1.TransactRequest { Batch = batch });
        var answers = new List<V1.TransactResponse>();
        while (answers.Count < requests.Length)
        {
            Assert.True(await call.ResponseStream.MoveNext(), $"the call ended after {answers.Count} of {requests.Length} answers");
            Assert.Equal(V1.TransactResponse.ResponseOneofCase.Batch, call.ResponseStream.Current.ResponseCase);
            answers.AddRange(call.ResponseStream.Current.Batch.Responses);
        }

        Assert.Equal(requests.Length, answers.Count);
        return answers;
    }

    private static void AssertResult(V1.TransactResponse answer, string? value)
    {
        Assert.Equal(V1.TransactResponse.ResponseOneofCase.Result, answer.ResponseCase);
        Assert.Equal(value is not null, answer.Result.Found);
        Assert.Equal(value ?? string.Empty, answer.Result.Value.ToStringUtf8());
        Assert.Empty(answer.Result.Rows);
    }

    private static V1.TransactRequest Begin() =>
        new() { Begin = new V1.BeginRequest { Isolation = V1.IsolationLevel.Serializable } };

    private static V1.TransactRequest Operation(V1.Operation operation) => new() { Operation = operation };

    private static V1.TransactRequest Commit() => new() { Commit = new V1.CommitRequest() };
}
