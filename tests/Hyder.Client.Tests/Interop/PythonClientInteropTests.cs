using System.Globalization;
using System.Text.Json;
using Hyder.Testing;
using Xunit;

namespace Hyder.Client.Tests;

/// <summary>Starts HyderService over the fake engine, runs grpcio's client against it once, and keeps what it reported.</summary>
public sealed class PythonClientRun : IAsyncLifetime
{
    private static readonly TimeSpan s_clientTimeout = TimeSpan.FromSeconds(60);
    private TestServer? _server;

    public JsonElement Report { get; private set; }

    public async Task InitializeAsync()
    {
        using var python = PythonGrpc.Prepare("hyder.proto");
        _server = await TestServer.StartAsync();
        Report = await python.RunClientAsync("python_client.py", _server.Server.Port, s_clientTimeout);
    }

    public async Task DisposeAsync()
    {
        if (_server is not null)
        {
            await _server.DisposeAsync();
        }
    }
}

/// <summary>grpcio's client (Debian python3-grpcio) calls every method of hyder.v1.Hyder, and bad requests.</summary>
public sealed class PythonClientInteropTests(PythonClientRun run) : IClassFixture<PythonClientRun>
{
    private JsonElement Report(string name) => run.Report.GetProperty(name);

    private static string[][] Rows(JsonElement e) =>
        e.EnumerateArray().Select(r => r.EnumerateArray().Select(x => x.GetString()!).ToArray()).ToArray();

    [Fact]
    public void Execute()
    {
        var r = Report("execute");
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", r.GetProperty("outcome").GetProperty("status").GetString());
        Assert.Equal("ABORT_CAUSE_NONE", r.GetProperty("outcome").GetProperty("cause").GetString());
        Assert.Equal(1, r.GetProperty("outcome").GetProperty("ordinal").GetInt64());
        Assert.Equal("[true,\"1\",false]", r.GetProperty("get").GetRawText());
        Assert.Equal([["a", "1"], ["b", "2"]], Rows(r.GetProperty("scan")));
        Assert.True(r.GetProperty("deleted").GetBoolean());
    }

    [Fact]
    public void Read() => Assert.Equal("[\"2\",null,\"1\"]", Report("read").GetRawText());

    [Fact]
    public void ScanStreamsOneRowPerBatch()
    {
        var r = Report("scan");
        Assert.Equal(2, r.GetProperty("batches").GetInt32());
        Assert.Equal([["a", "1"], ["b", "2"]], Rows(r.GetProperty("rows")));
    }

    [Fact]
    public void TransactAnswersEachRequestInOrderThenCommits()
    {
        var r = Report("transact");
        Assert.Equal(["begun", "result", "result", "result", "outcome"], r.GetProperty("kinds").EnumerateArray().Select(k => k.GetString()));
        Assert.Equal("4", r.GetProperty("get").GetString());
        Assert.Equal([["a", "1"], ["b", "2"], ["d", "4"]], Rows(r.GetProperty("scan")));
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", r.GetProperty("outcome").GetProperty("status").GetString());
        Assert.Equal(2, r.GetProperty("outcome").GetProperty("ordinal").GetInt64());
    }

    [Fact]
    public void TransactTakesAWholeTransactionInOneBatch()
    {
        var r = Report("transact_batch");
        // The read's value is the transaction's until it ends, so its answer leaves before the commit's.
        Assert.Equal(["batch", "batch"], r.GetProperty("messages").EnumerateArray().Select(k => k.GetString()));
        Assert.Equal(["begun", "result", "result", "outcome"], r.GetProperty("kinds").EnumerateArray().Select(k => k.GetString()));
        Assert.Equal("5", r.GetProperty("get").GetString());
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", r.GetProperty("status").GetString());
    }

    [Fact]
    public void TransactAbort()
    {
        var r = Report("transact_abort");
        Assert.Equal("TRANSACTION_STATUS_ABORTED", r.GetProperty("status").GetString());
        Assert.Equal("ABORT_CAUSE_NONE", r.GetProperty("cause").GetString());
        Assert.Equal("aborted by the client", r.GetProperty("detail").GetString());
    }

    [Fact]
    public void StatusStateHashCheckpoint()
    {
        var status = Report("status");
        Assert.Equal("fake-1", status.GetProperty("server_id").GetString());
        Assert.Equal(2, status.GetProperty("last_melded").GetInt64());
        Assert.Equal(2, status.GetProperty("committed").GetInt64());
        Assert.Equal("[\"fake-2\",\"fake-3\"]", status.GetProperty("peers").GetRawText());

        var hash = Report("state_hash");
        Assert.Equal(2, hash.GetProperty("ordinal").GetInt64());
        Assert.Equal(2, hash.GetProperty("sequence").GetInt64());
        Assert.NotEqual(0UL, ulong.Parse(hash.GetProperty("hash").GetString()!, CultureInfo.InvariantCulture));

        Assert.Equal(2, Report("checkpoint").GetInt64());
    }

    [Theory]
    [InlineData("empty_key", "INVALID_ARGUMENT", "operations[1].key is empty; keys must not be")]
    [InlineData("unknown_isolation", "INVALID_ARGUMENT", "unknown isolation level 42")]
    [InlineData("transact_without_begin", "INVALID_ARGUMENT", "the first message of Transact must be begin, not operation")]
    [InlineData("read_empty_key", "INVALID_ARGUMENT", "keys[0] is empty; keys must not be")]
    [InlineData("scan_negative_limit", "INVALID_ARGUMENT", "limit is negative (-1)")]
    [InlineData("negative_ordinal", "INVALID_ARGUMENT", "at_least_ordinal is negative (-1)")]
    [InlineData("add_empty_bounds", "INVALID_ARGUMENT", "operations[1]: an ADD's bounds [5, 1] are empty (min > max)")]
    [InlineData("top_k_zero", "INVALID_ARGUMENT", "operations[1].k is 0; a TOP_K_INSERT's k must be 1 to 1024")]
    [InlineData("unknown_kind", "INVALID_ARGUMENT", "operations[1].kind: unknown operation kind 99")]
    [InlineData("deadline", "DEADLINE_EXCEEDED", null)]
    [InlineData("transact_nested_batch", "INVALID_ARGUMENT", "batch.requests[1] is a batch: batches do not nest")]
    public void BadCallsGetTheirStatus(string name, string code, string? details)
    {
        var r = Report("bad").GetProperty(name);
        Assert.Equal(code, r.GetProperty("code").GetString());
        if (details is not null)
        {
            Assert.Equal(details, r.GetProperty("details").GetString());
        }
    }

    [Fact]
    public void CommutativeOperationsCommitAndABoundedAddAbortsWithItsCause()
    {
        var r = Report("commutative");
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", r.GetProperty("outcome").GetProperty("status").GetString());
        Assert.Equal("[7,3,-3]", r.GetProperty("counters").GetRawText());
        Assert.Equal("TRANSACTION_STATUS_ABORTED", Report("bound_violated").GetProperty("status").GetString());
        Assert.Equal("ABORT_CAUSE_BOUND_VIOLATED", Report("bound_violated").GetProperty("cause").GetString());
    }

    [Fact]
    public void ExecuteStreamAnswersEachTransactionByIdAndABadOneWithAnError()
    {
        var r = Report("execute_stream");
        Assert.Equal("[7,8,9]", r.GetProperty("ids").GetRawText());
        Assert.Equal("[\"TRANSACTION_STATUS_COMMITTED\",\"TRANSACTION_STATUS_COMMITTED\"]", r.GetProperty("committed").GetRawText());
        Assert.True(r.GetProperty("found").GetBoolean());
        var bad = r.GetProperty("bad");
        Assert.Equal("error", bad[0].GetString());
        Assert.Equal((int)Grpc.Core.StatusCode.InvalidArgument, bad[1].GetInt32());
        Assert.Contains("operations[0].key is empty", bad[2].GetString(), StringComparison.Ordinal);
    }

    [Fact]
    public void NothingFromTheBadCallsWasApplied() => Assert.Equal("[false]", Report("x_after_bad").GetRawText());
}
