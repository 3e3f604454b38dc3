using System.Text.RegularExpressions;
using Hyder.Log.Transport;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Log.Tests;

/// <summary>The log host with <c>--metrics-listen</c>: Prometheus scrapes the Hyder.Log meter.</summary>
public sealed partial class MetricsProcessTests(ITestOutputHelper output)
{
    [Fact]
    public async Task AScrapeShowsTheRequestsTheHostServedByOperation()
    {
        using var dir = new TempDirectory();
        // HttpListener cannot bind port 0 and report it: a reserved port, below the ephemeral range.
        var port = Hyder.Testing.ReservedPorts.Take();

        var host = await HostProcess.StartAsync("--role", "projection", "--data", dir.Sub("p"), "--port", "0", "--metrics-listen", $"127.0.0.1:{port}");
        try
        {
            await using (var store = new RemoteProjectionStore(host.Endpoint))
            {
                for (var i = 0; i < 3; i++)
                {
                    Assert.Null(await store.GetLatestAsync());
                }
            }

            using var http = new HttpClient();
            var scrape = await http.GetStringAsync(new Uri($"http://127.0.0.1:{port}/metrics"));
            output.WriteLine(scrape);
            var requests = SampleLine().Matches(scrape).Single(m => m.Groups["name"].Value == "hyder_log_requests_total" && m.Groups["labels"].Value.Contains("op=\"GetProjection\"", StringComparison.Ordinal));
            Assert.Equal("3", requests.Groups["value"].Value);
            Assert.Contains("hyder_log_refused_connections_total{", scrape, StringComparison.Ordinal);
            Assert.Equal(0, await host.StopAsync());
        }
        finally
        {
            await host.DisposeAsync();
        }
    }

    [GeneratedRegex(@"^(?<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?<labels>[^}]*)\})? (?<value>\S+)", RegexOptions.Multiline)]
    private static partial Regex SampleLine();
}
