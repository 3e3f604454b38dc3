using Hyder.Client;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// ASP.NET Core's hosting diagnostics (an Activity, a logging scope and "Request starting/finished"
/// lines for every call) stay off in hyder-server unless the configuration names their category:
/// turning on Microsoft.AspNetCore as a whole does not bring back work per call.
/// </summary>
public sealed class HostingDiagnosticsTests(ITestOutputHelper output)
{
    private const string RequestLine = "Request starting";

    [Fact]
    public async Task PerCallHostingDiagnosticsStayOffUnlessTheirCategoryIsNamed()
    {
        using var directory = new TempDirectory("hyder-hosting-diagnostics-");

        var aspNetCore = await LogOfCallsAsync(directory.Path, "aspnetcore.json", """{ "Logging": { "LogLevel": { "Microsoft.AspNetCore": "Information" } } }""");
        Assert.DoesNotContain(RequestLine, aspNetCore, StringComparison.Ordinal);

        var named = await LogOfCallsAsync(directory.Path, "named.json", """{ "Logging": { "LogLevel": { "Microsoft.AspNetCore.Hosting.Diagnostics": "Information" } } }""");
        Assert.Contains(RequestLine, named, StringComparison.Ordinal);
    }

    /// <summary>Starts hyder-server with a configuration file, makes a few calls, stops it and returns what it logged.</summary>
    private async Task<string> LogOfCallsAsync(string directory, string name, string json)
    {
        var config = Path.Combine(directory, name);
        await File.WriteAllTextAsync(config, json);
        await using var server = await ServerProcess.StartAsync("--embedded", "--listen", "http://127.0.0.1:0", "--config", config);
        await using (var client = new HyderClient(new HyderClientSettings { Endpoint = server.Address, Timeout = TimeSpan.FromSeconds(10) }))
        {
            await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put("k"u8.ToArray(), "v"u8.ToArray())]);
            await client.GetStatusAsync();
        }

        // The console logger writes from a queue: a clean stop flushes it.
        var (code, _) = await server.StopAsync(TimeSpan.FromSeconds(10));
        output.WriteLine($"{name}:\n{server.Output}");
        Assert.True(code == 0, server.Output);
        return server.Output;
    }
}
