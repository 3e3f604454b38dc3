using System.Diagnostics;
using System.Net;
using Hyder.Client;
using Hyder.Soak.Cluster;
using Hyder.Soak.Workload;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Processes.Tests.Faults;

/// <summary>
/// A cluster of real processes (projection store, sequencer, two log units in a chain, two servers)
/// whose log links (every client's connections to the units and the sequencer) and broadcast links
/// (each server's to each peer) run through <see cref="FaultProxy"/>s, under a checked list-append
/// load: a clean phase; delay, jitter, dropped and reset connections and capped broadcast
/// bandwidth; one broadcast direction blackholed and the head unit's connections reset; the tail
/// unit partitioned with its connections left open; then the heal. Nothing
/// acknowledged may be lost, the history must be serializable, the servers' state hashes equal.
/// </summary>
[Collection(RealProcesses.Name)]
public sealed class ProxyFaultTests(ITestOutputHelper output)
{
    private static readonly TimeSpan s_logPartition = TimeSpan.FromSeconds(15);

    [Fact]
    public Task LossyLinksAndAHealedPartitionLoseNothingAcknowledged() => RunAsync(seed: 1, phase: TimeSpan.FromSeconds(2.5));

    [Fact]
    [Trait("Category", "Stress")]
    public Task LossyLinksAndAHealedPartitionLoseNothingAcknowledgedOverMinutes() => RunAsync(seed: 2, phase: TimeSpan.FromSeconds(30));

    private async Task RunAsync(int seed, TimeSpan phase)
    {
        var clock = Stopwatch.StartNew();
        var proxies = new Dictionary<string, FaultProxy>();
        HistoryRecorder? recorder = null;
        using var directory = new TempDirectory("hyder-proxy-");
        try
        {
            await using var cluster = LocalCluster.Create(new LocalClusterOptions
            {
                Directory = directory.Path,
                Units = 2,
                Replicas = 2,
                Servers = 2,
                Hosts = HostBinaries.FromRepository(),
                Route = (link, endpoint) =>
                {
                    if (link == "projection")
                    {
                        return endpoint; // configuration, not the data path
                    }

                    var proxy = new FaultProxy(link, IPEndPoint.Parse(endpoint), seed * 100 + proxies.Count);
                    proxies.Add(link, proxy);
                    return proxy.EndPoint.ToString();
                },
            });
            await cluster.StartAsync();
            output.WriteLine($"{clock.Elapsed.TotalSeconds:F1} s: cluster up; proxies {string.Join(", ", proxies.Select(p => $"{p.Key} {p.Value.EndPoint}"))}");

            var clients = cluster.Servers.Select(p => new HyderClient(new HyderClientSettings { Endpoint = new Uri(p.Endpoint), Timeout = TimeSpan.FromSeconds(3) })).ToArray();
            try
            {
                recorder = new HistoryRecorder();
                using var stop = new CancellationTokenSource();
                var load = new ListAppendWorkload(recorder, seed).RunAsync(clients, processes: 6, firstProcess: 0, stop.Token);
                long healed;
                long unitOneConnections;
                try
                {
                    await Phase("clean", phase);
                    var lossy = new FaultSettings { Delay = TimeSpan.FromMilliseconds(1), Jitter = TimeSpan.FromMilliseconds(4), Drop = 0.002, Reset = 0.002 };
                    foreach (var (link, proxy) in proxies)
                    {
                        proxy.Settings = link.Contains("->", StringComparison.Ordinal) ? lossy with { BytesPerSecond = 256 * 1024 } : lossy;
                    }

                    await Phase("delay, jitter, drops, resets, broadcast capped at 256 KiB/s", phase);
                    proxies["server-1->server-2"].Settings = proxies["server-1->server-2"].Settings with { BlackholeForward = true };
                    unitOneConnections = proxies["unit-1"].Counters.Connections;
                    proxies["unit-1"].ResetAll();
                    await Phase("server-1's broadcast to server-2 blackholed (one way), unit-1's connections reset", phase);
                    // Shorter than the log client's 30 s operation timeout: a log that does not
                    // answer for longer stops a server's reader (docs/reliability.md).
                    proxies["unit-2"].Settings = proxies["unit-2"].Settings.Partitioned();
                    await Phase("unit-2 (the chain's tail) partitioned, its connections left open", phase < s_logPartition ? phase : s_logPartition);
                    foreach (var proxy in proxies.Values)
                    {
                        proxy.Settings = FaultSettings.None;
                    }

                    // The connections to unit-2 that the partition left hanging are reset, as a
                    // peer's keepalive would end them; clients reconnect.
                    proxies["unit-2"].ResetAll();
                    var atHeal = recorder.Counts.Ok;
                    await Phase("healed", phase);
                    healed = recorder.Counts.Ok - atHeal;
                }
                finally
                {
                    await stop.CancelAsync();
                    await load;
                }

                var counts = recorder.Counts;
                output.WriteLine($"transactions ok {counts.Ok}, failed {counts.Failed}, unknown {counts.Unknown}; ok after the heal {healed}");
                foreach (var (link, proxy) in proxies)
                {
                    output.WriteLine($"proxy {link}: {proxy.Counters}");
                }

                var verification = await Verifier.VerifyAsync(clients, recorder, firstProcess: 1000, TimeSpan.FromSeconds(60));
                output.WriteLine(verification.ToString());
                Assert.True(verification.Converged, "servers diverged");
                Assert.Empty(verification.Lost);
                Assert.True(verification.Check.Valid, verification.Check.ToString());
                Assert.True(healed > 0, "nothing committed after the heal");

                // The faults happened: connections were dropped and reset, bytes blackholed, and
                // clients connected again.
                Assert.True(proxies.Values.Sum(p => p.Counters.Resets) > 0, "no connection was reset");
                Assert.True(proxies["server-1->server-2"].Counters.BlackholedBytes > 0, "no broadcast was blackholed");
                Assert.True(proxies["unit-2"].Counters.BlackholedBytes > 0, "nothing sent to unit-2 was blackholed");
                Assert.True(proxies["unit-1"].Counters.Connections > unitOneConnections, "no client reconnected to unit-1 after its connections were reset");
            }
            catch
            {
                foreach (var process in cluster.All)
                {
                    output.WriteLine($"--- {process.Name}, last lines:\n{process.Tail}");
                }

                throw;
            }
            finally
            {
                foreach (var client in clients)
                {
                    await client.DisposeAsync();
                }
            }
        }
        finally
        {
            foreach (var proxy in proxies.Values)
            {
                await proxy.DisposeAsync();
            }
        }

        async Task Phase(string what, TimeSpan length)
        {
            var counts = recorder?.Counts;
            output.WriteLine($"{clock.Elapsed.TotalSeconds:F1} s: {what} (so far ok {counts?.Ok}, failed {counts?.Failed}, unknown {counts?.Unknown})");
            await Task.Delay(length);
        }
    }
}
