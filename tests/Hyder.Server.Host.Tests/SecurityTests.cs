using System.Security.Cryptography;
using System.Text;
using Hyder.Client;
using Grpc.Core;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// The client API's role boundaries on the real server over TLS, with the .NET client and with
/// grpcio (python3-grpcio; missing packages fail with what to install, as the other interop tests).
/// </summary>
public sealed class SecurityTests(SecureServer server, ITestOutputHelper output) : IClassFixture<SecureServer>
{
    private static readonly string[] s_calls = ["read", "scan", "execute_read", "execute_write", "stream_read", "stream_write", "transact_read", "transact_write", "status", "state_hash", "checkpoint"];

    /// <summary>What each role may do: reader reads, writer also writes, admin also checkpoints; no or a wrong token: nothing.</summary>
    private static string Expected(string who, string call) => who switch
    {
        "none" or "wrong" => "UNAUTHENTICATED",
        "reader" => call is "execute_write" or "stream_write" or "transact_write" or "checkpoint" ? "PERMISSION_DENIED" : "OK",
        "writer" => call == "checkpoint" ? "PERMISSION_DENIED" : "OK",
        "admin" => "OK",
        _ => throw new ArgumentOutOfRangeException(nameof(who)),
    };

    [Fact]
    public async Task EveryRoleBoundaryHoldsForTheDotNetClient()
    {
        foreach (var who in new[] { "none", "wrong", "reader", "writer", "admin" })
        {
            await using var client = server.Client(who == "none" ? null : server.Tokens[who]);
            await using var multiplexed = server.Client(who == "none" ? null : server.Tokens[who], multiplex: true);
            var key = Encoding.UTF8.GetBytes("net-" + who);
            foreach (var call in s_calls)
            {
                var actual = await CodeAsync(() => RunAsync(call.StartsWith("stream_", StringComparison.Ordinal) ? multiplexed : client, call, key));
                Assert.True(Expected(who, call) == actual, $"{who} {call}: expected {Expected(who, call)}, got {actual}");
            }
        }
    }

    [Fact]
    public async Task EveryRoleBoundaryHoldsForGrpcioOverTls()
    {
        using var python = PythonGrpc.Prepare("hyder.proto");
        var tokenFile = Path.Combine(server.Directory, "py-tokens");
        File.WriteAllLines(tokenFile, ["none -", .. server.Tokens.Select(t => $"{t.Key} {t.Value}")]);
        var report = await python.RunClientAsync(
            "python_security.py",
            [server.Process.Address.Port.ToString(System.Globalization.CultureInfo.InvariantCulture), server.CaPath, server.WrongCaPath, tokenFile],
            TimeSpan.FromSeconds(90),
            () => server.Process.Output);
        output.WriteLine(report.GetRawText());
        foreach (var who in new[] { "none", "wrong", "reader", "writer", "admin" })
        {
            foreach (var call in s_calls)
            {
                var actual = report.GetProperty(who).GetProperty(call).GetString();
                Assert.True(Expected(who, call) == actual, $"{who} {call}: expected {Expected(who, call)}, got {actual}");
            }
        }

        Assert.Equal("UNAVAILABLE", report.GetProperty("plaintext").GetString());
        Assert.Equal("UNAVAILABLE", report.GetProperty("wrong_ca").GetString());
    }

    [Fact]
    public async Task TheDotNetClientRefusesAServerItsCaDidNotSignAndPlaintextGetsNoAnswer()
    {
        var settings = new HyderClientSettings { Endpoint = server.Process.Address, Timeout = TimeSpan.FromSeconds(10), Token = server.Tokens["admin"] };
        await using (var systemTrust = new HyderClient(settings))
        {
            Assert.Equal("UNAVAILABLE", await CodeAsync(() => systemTrust.GetStatusAsync()));
        }

        await using (var wrongCa = new HyderClient($"Endpoint={server.Process.Address};TrustedCa={server.WrongCaPath};Token={server.Tokens["admin"]}"))
        {
            Assert.Equal("UNAVAILABLE", await CodeAsync(() => wrongCa.GetStatusAsync()));
        }

        await using (var plaintext = new HyderClient(settings with { Endpoint = new UriBuilder(server.Process.Address) { Scheme = "http" }.Uri }))
        {
            Assert.Equal("UNAVAILABLE", await CodeAsync(() => plaintext.GetStatusAsync()));
        }

        // The connection string form of the right settings works.
        await using var right = new HyderClient($"Endpoint={server.Process.Address};TrustedCa={server.CaPath};Token={server.Tokens["admin"]}");
        Assert.Equal("secure", (await right.GetStatusAsync()).ServerId);
        Assert.DoesNotContain(server.Tokens["admin"], right.Settings.ToString(), StringComparison.Ordinal);
    }

    [Fact]
    public async Task TheServerLogsRefusalsWithoutTheirTokens()
    {
        foreach (var who in new[] { "wrong", "reader" })
        {
            await using var client = server.Client(server.Tokens[who]);
            Assert.NotEqual("OK", await CodeAsync(() => client.CheckpointAsync()));
        }

        await using (var admin = server.Client(server.Tokens["admin"]))
        {
            await admin.CheckpointAsync();
        }

        var log = server.Process.Output;
        output.WriteLine(log);
        Assert.Contains("Refused /hyder.v1.Hyder/Checkpoint", log, StringComparison.Ordinal);
        foreach (var token in server.Tokens.Values)
        {
            Assert.DoesNotContain(token, log, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task KeysNewPrintsATokenOnceAndTheLineWithItsHash()
    {
        var (code, text) = await ServerProcess.RunAsync(null, "keys", "new", "--name", "ci-bot", "--role", "writer");
        Assert.Equal(0, code);
        var token = text.Split('\n').Single(l => l.StartsWith("token: ", StringComparison.Ordinal))["token: ".Length..].Trim();
        var line = text.Split('\n').Single(l => l.StartsWith("key:", StringComparison.Ordinal))["key:".Length..].Trim();
        Assert.Equal($"ci-bot writer sha256:{Convert.ToHexStringLower(SHA256.HashData(Encoding.UTF8.GetBytes(token)))}", line);
        Assert.DoesNotContain(token, line, StringComparison.Ordinal);

        (code, text) = await ServerProcess.RunAsync(null, "keys", "new", "--name", "ci-bot", "--role", "root");
        Assert.Equal(2, code);
        Assert.Contains("--role", text, StringComparison.Ordinal);
    }

    private static async Task RunAsync(HyderClient client, string call, byte[] key)
    {
        switch (call)
        {
            case "read":
                await client.ReadAsync([key]);
                break;
            case "scan":
                await foreach (var _ in client.ScanAsync(null, null))
                {
                }

                break;
            case "execute_read" or "stream_read":
                await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(key)]);
                break;
            case "execute_write" or "stream_write":
                await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Get(key), HyderOperation.Put(key, [1])]);
                break;
            case "transact_read":
            case "transact_write":
                await using (var transaction = await client.BeginAsync())
                {
                    if (call == "transact_read")
                    {
                        await transaction.GetAsync(key);
                    }
                    else
                    {
                        await transaction.PutAsync(key, [2]);
                    }

                    await transaction.CommitAsync();
                }

                break;
            case "status":
                await client.GetStatusAsync();
                break;
            case "state_hash":
                await client.GetStateHashAsync();
                break;
            case "checkpoint":
                await client.CheckpointAsync();
                break;
            default:
                throw new ArgumentOutOfRangeException(nameof(call));
        }
    }

    /// <summary>The call's outcome as grpcio names status codes.</summary>
    private static async Task<string> CodeAsync(Func<Task> call)
    {
        try
        {
            await call();
            return "OK";
        }
        catch (HyderException e)
        {
            return Name(e.StatusCode);
        }
    }

    private static string Name(StatusCode code) => code switch
    {
        StatusCode.Unauthenticated => "UNAUTHENTICATED",
        StatusCode.PermissionDenied => "PERMISSION_DENIED",
        StatusCode.Unavailable => "UNAVAILABLE",
        _ => code.ToString(),
    };
}
