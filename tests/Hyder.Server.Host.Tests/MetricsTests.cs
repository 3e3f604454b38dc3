using System.Text;
using System.Text.RegularExpressions;
using Hyder.Client;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>hyder-server with <c>--metrics-listen</c>: Prometheus scrapes the Hyder.Server meter.</summary>
public sealed partial class MetricsTests(ITestOutputHelper output)
{
    private static byte[] Bytes(string s) => Encoding.UTF8.GetBytes(s);

    /// <summary>A reserved port below the ephemeral range (HttpListener cannot bind port 0 and report it).</summary>
    internal static int FreePort() => Hyder.Testing.ReservedPorts.Take();

    /// <summary>The value of the first sample of <paramref name="metric"/> whose labels contain every one of <paramref name="labels"/>.</summary>
    internal static double Sample(string scrape, string metric, params string[] labels)
    {
        foreach (Match m in SampleLine().Matches(scrape))
        {
            if (m.Groups["name"].Value == metric && labels.All(l => m.Groups["labels"].Value.Contains(l, StringComparison.Ordinal)))
            {
                return double.Parse(m.Groups["value"].Value, System.Globalization.CultureInfo.InvariantCulture);
            }
        }

        throw new Xunit.Sdk.XunitException($"no sample of {metric} with {string.Join(", ", labels)} in:\n{scrape}");
    }

    [Fact]
    public async Task AScrapeShowsCommitsAbortsByCauseAndTheConflictZone()
    {
        var port = FreePort();
        await using var server = await ServerProcess.StartAsync("--embedded", "--listen", "http://127.0.0.1:0", "--server-id", "solo", "--metrics-listen", $"127.0.0.1:{port}");
        await using (var client = new HyderClient(new HyderClientSettings { Endpoint = server.Address, Timeout = TimeSpan.FromSeconds(10), MaxRetries = 5 }))
        {
            await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Bytes("hot"), Bytes("0"))]);

            // The first attempt reads "hot", then another transaction commits a write to it: that
            // attempt aborts (it wrote the key the other changed in its conflict zone: meld reports
            // write-write first), and the retry commits.
            var attempts = 0;
            await client.ReadWriteAsync(async tx =>
            {
                var value = await tx.GetAsync(Bytes("hot"));
                if (++attempts == 1)
                {
                    await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Bytes("hot"), Bytes("1"))]);
                }

                await tx.PutAsync(Bytes("hot"), [.. value!, .. Bytes("+")]);
            });
            Assert.Equal(2, attempts);
        }

        using var http = new HttpClient();
        var scrape = await http.GetStringAsync(new Uri($"http://127.0.0.1:{port}/metrics"));
        output.WriteLine(scrape);
        Assert.True(Sample(scrape, "hyder_commits_total", "server=\"solo\"") >= 3);
        Assert.Equal(1, Sample(scrape, "hyder_aborts_total", "server=\"solo\"", "cause=\"WriteWrite\""));
        Assert.True(Sample(scrape, "hyder_conflict_zone_total", "server=\"solo\"") >= 1);
        Assert.Equal(0, Sample(scrape, "hyder_in_flight", "server=\"solo\""));
    }

    [Fact]
    public async Task AMetricsAddressThatIsNotHostAndPortExitsWithTwo()
    {
        var (code, text) = await ServerProcess.RunAsync(null, "--embedded", "--metrics-listen", "http://127.0.0.1");
        Assert.Equal(2, code);
        Assert.Contains("--metrics-listen [Metrics:Listen] 'http://127.0.0.1' is not HOST:PORT", text, StringComparison.Ordinal);
    }

    [GeneratedRegex(@"^(?<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(\{(?<labels>[^}]*)\})? (?<value>\S+)", RegexOptions.Multiline)]
    private static partial Regex SampleLine();
}
