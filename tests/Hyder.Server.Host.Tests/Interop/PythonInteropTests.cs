using System.Text.Json;
using Hyder.Testing;
using Xunit;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// grpcio's client (Debian python3-grpcio) against the real hyder-server process on an embedded
/// log: the client tests' script, run once, checked for what does not depend on a fake engine.
/// Gated like the client tests' interop: missing Python packages fail with what to install.
/// </summary>
public sealed class PythonInteropTests
{
    private static readonly TimeSpan s_clientTimeout = TimeSpan.FromSeconds(60);

    private static string[][] Rows(JsonElement e) =>
        e.EnumerateArray().Select(r => r.EnumerateArray().Select(x => x.GetString()!).ToArray()).ToArray();

    [Fact]
    public async Task GrpcioClientRunsEveryMethodAgainstTheRealServer()
    {
        using var python = PythonGrpc.Prepare("hyder.proto");
        await using var server = await ServerProcess.StartAsync("--embedded", "--listen", "http://127.0.0.1:0", "--server-id", "py-1");
        var report = await python.RunClientAsync("python_client.py", server.Address.Port, s_clientTimeout, () => server.Output);

        var execute = report.GetProperty("execute");
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", execute.GetProperty("outcome").GetProperty("status").GetString());
        Assert.Equal("[true,\"1\",false]", execute.GetProperty("get").GetRawText());
        Assert.Equal([["a", "1"], ["b", "2"]], Rows(execute.GetProperty("scan")));
        Assert.True(execute.GetProperty("deleted").GetBoolean());
        Assert.Equal("[\"2\",null,\"1\"]", report.GetProperty("read").GetRawText());
        Assert.Equal([["a", "1"], ["b", "2"]], Rows(report.GetProperty("scan").GetProperty("rows")));

        var transact = report.GetProperty("transact");
        Assert.Equal(["begun", "result", "result", "result", "outcome"], transact.GetProperty("kinds").EnumerateArray().Select(k => k.GetString()));
        Assert.Equal([["a", "1"], ["b", "2"], ["d", "4"]], Rows(transact.GetProperty("scan")));
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", transact.GetProperty("outcome").GetProperty("status").GetString());
        Assert.Equal("TRANSACTION_STATUS_ABORTED", report.GetProperty("transact_abort").GetProperty("status").GetString());

        var status = report.GetProperty("status");
        Assert.Equal("py-1", status.GetProperty("server_id").GetString());
        Assert.True(status.GetProperty("committed").GetInt64() >= 2);
        Assert.Equal(status.GetProperty("last_melded").GetInt64(), report.GetProperty("state_hash").GetProperty("ordinal").GetInt64());

        var commutative = report.GetProperty("commutative");
        Assert.Equal("TRANSACTION_STATUS_COMMITTED", commutative.GetProperty("outcome").GetProperty("status").GetString());
        Assert.Equal("[7,3,-3]", commutative.GetProperty("counters").GetRawText());
        Assert.Equal("ABORT_CAUSE_BOUND_VIOLATED", report.GetProperty("bound_violated").GetProperty("cause").GetString());

        var bad = report.GetProperty("bad");
        foreach (var name in new[] { "empty_key", "unknown_isolation", "transact_without_begin", "read_empty_key", "scan_negative_limit", "negative_ordinal", "add_empty_bounds", "top_k_zero", "unknown_kind" })
        {
            Assert.Equal("INVALID_ARGUMENT", bad.GetProperty(name).GetProperty("code").GetString());
        }

        Assert.Equal("DEADLINE_EXCEEDED", bad.GetProperty("deadline").GetProperty("code").GetString());
        Assert.Equal("[false]", report.GetProperty("x_after_bad").GetRawText());

        var (code, _) = await server.StopAsync(TimeSpan.FromSeconds(10));
        Assert.True(code == 0, server.Output);
    }
}
