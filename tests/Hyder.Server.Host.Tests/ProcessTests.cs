using System.Text;
using System.Text.Json;
using Hyder.Client;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>The real hyder-server process: ready line, transactions, SIGTERM, restart on the same data, bad configuration.</summary>
public sealed class ProcessTests(ITestOutputHelper output)
{
    private static readonly TimeSpan s_stopPatience = TimeSpan.FromSeconds(10);

    private static byte[] Bytes(string s) => Encoding.UTF8.GetBytes(s);

    private static HyderClient Client(Uri address) => new(new HyderClientSettings
    {
        Endpoint = address,
        Timeout = TimeSpan.FromSeconds(10),
        MaxRetries = 100,
        RetryDelay = TimeSpan.FromMilliseconds(1),
        MaxRetryDelay = TimeSpan.FromMilliseconds(20),
    });

    [Fact]
    public void TheHostRunsTheServerGarbageCollector()
    {
        // docs/server.md, "Garbage collector": under load the server collector halved the p99 of
        // one-shot calls against the workstation one (docs/benchmarks/rpc.md, "Server GC").
        var config = Path.ChangeExtension(ServerProcess.HostDll, ".runtimeconfig.json");
        using var json = JsonDocument.Parse(File.ReadAllText(config));
        var properties = json.RootElement.GetProperty("runtimeOptions").GetProperty("configProperties");
        Assert.True(properties.GetProperty("System.GC.Server").GetBoolean(), $"{config} does not turn the server GC on");
    }

    [Fact]
    public async Task EmbeddedServerStopsCleanlyOnSigtermAndKeepsCommittedDataAcrossRestart()
    {
        using var data = new TempDirectory("hyder-host-test-");
        string[] args = ["--embedded", "--data", data.Path, "--listen", "http://127.0.0.1:0", "--server-id", "solo"];
        long lastOrdinal;
        await using (var server = await ServerProcess.StartAsync(args))
        {
            await using (var client = Client(server.Address))
            {
                for (var i = 0; i < 20; i++)
                {
                    await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Bytes($"k{i:D2}"), Bytes($"v{i}"))]);
                }

                lastOrdinal = await client.ReadWriteAsync(async tx =>
                {
                    var v = await tx.GetAsync(Bytes("k00"));
                    await tx.PutAsync(Bytes("k00"), [.. v!, .. Bytes("+")]);
                    return 0L;
                });
                var status = await client.GetStatusAsync();
                Assert.Equal("solo", status.ServerId);
                lastOrdinal = status.LastMelded;
                Assert.True(status.Committed >= 21, $"committed {status.Committed}");
            }

            var (code, took) = await server.StopAsync(s_stopPatience);
            output.WriteLine($"first run stopped with {code} in {took.TotalMilliseconds:F0} ms");
            Assert.True(code == 0, server.Output);
            Assert.Contains("Server stopped cleanly", server.Output, StringComparison.Ordinal);
        }

        await using (var server = await ServerProcess.StartAsync(args))
        {
            await using (var client = Client(server.Address))
            {
                // The restarted server melds the log forward; wait until it has reached the old tail.
                var hash = await client.GetStateHashAsync(lastOrdinal);
                Assert.True(hash.Ordinal >= lastOrdinal);
                var values = await client.ReadAsync(Enumerable.Range(0, 20).Select(i => Bytes($"k{i:D2}")));
                Assert.Equal("v0+", Encoding.UTF8.GetString(values[0]!));
                for (var i = 1; i < 20; i++)
                {
                    Assert.Equal($"v{i}", Encoding.UTF8.GetString(values[i]!));
                }

                await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Bytes("after-restart"), Bytes("yes"))]);
            }

            var (code, _) = await server.StopAsync(s_stopPatience);
            Assert.True(code == 0, server.Output);
        }
    }

    [Fact]
    public async Task WithoutDataTheEmbeddedLogUsesATemporaryDirectoryRemovedOnExit()
    {
        await using var server = await ServerProcess.StartAsync("--embedded", "--listen", "http://127.0.0.1:0");
        await using (var client = Client(server.Address))
        {
            await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Bytes("a"), Bytes("1"))]);
        }

        var line = server.Output.Split('\n').Single(l => l.Contains("temporary directory", StringComparison.Ordinal) && l.Contains("No --data", StringComparison.Ordinal));
        var directory = line[(line.IndexOf(Path.GetTempPath(), StringComparison.Ordinal))..].Split(',')[0].Trim();
        Assert.True(Directory.Exists(directory), directory);
        var (code, _) = await server.StopAsync(s_stopPatience);
        Assert.True(code == 0, server.Output);
        Assert.False(Directory.Exists(directory), directory);
    }

    [Theory]
    [InlineData("--distance", "--embedded --distance -1")]
    [InlineData("--listen", "--embedded --listen nowhere")]
    [InlineData("--block-size", "--embedded --block-size lots")]
    [InlineData("--peer", "--embedded --peer 10.0.0.1")]
    [InlineData("--embedded", "--server-id lonely")]
    [InlineData("--log", "--embedded --log tcp:127.0.0.1:7100")]
    [InlineData("--data", "--log file:/nonexistent --data /tmp/x")]
    [InlineData("--fsync", "--embedded --fsync sometimes")]
    [InlineData("--commit-delay-us", "--embedded --commit-delay-us 200000")]
    [InlineData("--page-cache-slots", "--embedded --page-cache-slots -1")]
    [InlineData("--max-top-k", "--embedded --max-top-k 2000")]
    [InlineData("--spin", "--embedded --spin sometimes")]
    [InlineData("--final-meld-nice", "--embedded --final-meld-nice -21")]
    [InlineData("--broadcast-trust", "--embedded --broadcast-trust maybe")]
    [InlineData("--recycle-values", "--embedded --recycle-values sometimes")]
    [InlineData("--tls-certificate", "--embedded --listen https://127.0.0.1:0")]
    [InlineData("--tls-certificate", "--embedded --listen https://127.0.0.1:0 --tls-certificate /nonexistent/server.crt")]
    [InlineData("--tls-key", "--embedded --tls-key server.key")]
    [InlineData("--listen", "--embedded --listen http://0.0.0.0:0")]
    [InlineData("--anonymous", "--embedded --listen http://0.0.0.0:0 --allow-plaintext")]
    [InlineData("--anonymous", "--embedded --anonymous root")]
    [InlineData("--api-key", "--embedded --api-key alice")]
    [InlineData("--keys-file", "--embedded --keys-file /nonexistent/keys")]
    [InlineData("--certificate-role", "--embedded --certificate-role admin")]
    [InlineData("--request-timeout", "--embedded --request-timeout -1")]
    [InlineData("--max-header-bytes", "--embedded --max-header-bytes 10")]
    [InlineData("--max-stream-transactions", "--embedded --max-stream-transactions 0")]
    [InlineData("--no-such-option", "--embedded --no-such-option")]
    [InlineData("--commutative", "--embedded --commutative maybe")]
    [InlineData("--split-phase", "--embedded --split-phase -5")]
    [InlineData("--split-phase", "--embedded --split-phase 64 --commutative off")]
    [InlineData("--hot-keys", "--embedded --split-phase 64 --hot-keys 0A,xyz")]
    public async Task BadConfigurationExitsWithTwoAndNamesTheOption(string option, string commandLine)
    {
        var (code, text) = await ServerProcess.RunAsync(null, commandLine.Split(' '));
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains(option, text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task EnvironmentVariablesConfigureTheServerAndAreCheckedLikeOptions()
    {
        var (code, text) = await ServerProcess.RunAsync(
            new Dictionary<string, string> { ["HYDER_LOG__EMBEDDED"] = "true", ["HYDER_CLUSTER__STATEWINDOW"] = "3" });
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains("--state-window (Cluster:StateWindow)", text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ARestartWithOtherClusterSettingsIsRefusedWithTwo()
    {
        using var data = new TempDirectory("hyder-host-test-");
        await using (var server = await ServerProcess.StartAsync("--embedded", "--data", data.Path, "--listen", "http://127.0.0.1:0"))
        {
            Assert.Equal(0, (await server.StopAsync(s_stopPatience)).ExitCode);
        }

        var (code, text) = await ServerProcess.RunAsync(null, "--embedded", "--data", data.Path, "--listen", "http://127.0.0.1:0", "--state-window", "64");
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains("hyder-server:", text, StringComparison.Ordinal);
    }
}
