using System.Diagnostics;
using System.Globalization;
using Hyder.Client;
using Hyder.Soak.Cluster;
using Hyder.Soak.Workload;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Processes.Tests;

/// <summary>
/// Real processes on three hosts made of network namespaces (the log's processes on one, a server
/// on each of the others) joined by veth pairs to a bridge; the test's clients reach the servers
/// over the bridge. netem delay and loss on the servers' links where the kernel has it, load, a
/// partition of one server (its link down), the heal, then convergence and the history. Needs
/// root, iproute2 (ip, tc) and a kernel that creates namespaces; without root or namespaces it
/// returns at once and prints why, and as root without iproute2 it fails saying what to install.
/// </summary>
[Collection(RealProcesses.Name)]
public sealed class NetworkFaultTests(ITestOutputHelper output)
{
    [Fact]
    public async Task APartitionedServerCatchesUpAfterTheHealAndNothingAcknowledgedIsLost()
    {
        if (await UnavailableAsync() is { } reason)
        {
            output.WriteLine($"SKIPPED: {reason}");
            return;
        }

        var id = Guid.NewGuid().ToString("N")[..5];
        var (subnet, bridge) = (await FreeSubnetAsync(), $"hbr{id}");
        string[] hosts = ["log", "s1", "s2"];
        var namespaces = hosts.Select(h => $"hyder-{id}-{h}").ToArray();
        var links = hosts.Select((_, k) => $"hp{id}{k}").ToArray();
        string Address(int k) => $"{subnet}.{10 + k}";
        output.WriteLine($"namespaces {string.Join(", ", namespaces)} on bridge {bridge}, {subnet}.0/24");
        var clock = Stopwatch.StartNew();
        try
        {
            await MustAsync("ip", "link", "add", bridge, "type", "bridge");
            await MustAsync("ip", "addr", "add", $"{subnet}.1/24", "dev", bridge);
            await MustAsync("ip", "link", "set", bridge, "up");
            for (var k = 0; k < hosts.Length; k++)
            {
                var (ns, inside, outside) = (namespaces[k], links[k], $"hv{id}{k}");
                await MustAsync("ip", "netns", "add", ns);
                await MustAsync("ip", "link", "add", outside, "type", "veth", "peer", "name", inside);
                await MustAsync("ip", "link", "set", inside, "netns", ns);
                await MustAsync("ip", "link", "set", outside, "master", bridge);
                await MustAsync("ip", "link", "set", outside, "up");
                await MustAsync("ip", "netns", "exec", ns, "ip", "link", "set", "lo", "up");
                await MustAsync("ip", "netns", "exec", ns, "ip", "addr", "add", $"{Address(k)}/24", "dev", inside);
                await MustAsync("ip", "netns", "exec", ns, "ip", "link", "set", inside, "up");
            }

            // Delay and loss on the servers' links (both directions pass the bridge and the veth).
            var netem = true;
            for (var k = 1; k < hosts.Length && netem; k++)
            {
                var (code, text) = await RunAsync("ip", "netns", "exec", namespaces[k], "tc", "qdisc", "add", "dev", links[k], "root", "netem", "delay", "20ms", "loss", "5%");
                if (code != 0)
                {
                    netem = false;
                    output.WriteLine($"netem is not available ({text.Trim()}): the kernel lacks sch_netem; running without delay and loss");
                }
            }

            using var directory = new TempDirectory("hyder-netns-");
            await using var cluster = LocalCluster.Create(new LocalClusterOptions
            {
                Directory = directory.Path,
                Units = 2,
                Replicas = 2,
                Servers = 2,
                Hosts = HostBinaries.FromRepository(),
                Place = name =>
                {
                    var k = name.StartsWith("server-", StringComparison.Ordinal) ? int.Parse(name["server-".Length..], CultureInfo.InvariantCulture) : 0;
                    return new Placement(Address(k), ["ip", "netns", "exec", namespaces[k]]);
                },
            });
            await cluster.StartAsync();
            output.WriteLine($"cluster up in {clock.Elapsed.TotalSeconds:F1} s: {string.Join(", ", cluster.All.Select(p => $"{p.Name} {p.Endpoint}"))}");

            var clients = cluster.Servers.Select(p => new HyderClient(new HyderClientSettings { Endpoint = new Uri(p.Endpoint), Timeout = TimeSpan.FromSeconds(3) })).ToArray();
            try
            {
                var recorder = new HistoryRecorder();
                using var stop = new CancellationTokenSource();

                // Processes 0, 2, 4 use server-1; 1, 3, 5 server-2.
                var load = new ListAppendWorkload(recorder, seed: id.GetHashCode(StringComparison.Ordinal)).RunAsync(clients, processes: 6, firstProcess: 0, stop.Token);
                try
                {
                    await Task.Delay(TimeSpan.FromSeconds(6));
                    var before = recorder.Counts;
                    await MustAsync("ip", "netns", "exec", namespaces[2], "ip", "link", "set", links[2], "down");
                    output.WriteLine($"{clock.Elapsed.TotalSeconds:F1} s: server-2 partitioned; so far ok {before.Ok}, failed {before.Failed}, unknown {before.Unknown}");
                    var firstStatus = await clients[0].GetStatusAsync();
                    await Task.Delay(TimeSpan.FromSeconds(6));
                    var duringPartition = (await clients[0].GetStatusAsync()).Committed - firstStatus.Committed;
                    await MustAsync("ip", "netns", "exec", namespaces[2], "ip", "link", "set", links[2], "up");
                    output.WriteLine($"{clock.Elapsed.TotalSeconds:F1} s: healed; server-1 committed {duringPartition} transactions during the partition");
                    Assert.True(duringPartition > 0, "server-1 committed nothing while server-2 was cut off");
                    await Task.Delay(TimeSpan.FromSeconds(6));
                }
                finally
                {
                    await stop.CancelAsync();
                    await load;
                }

                var counts = recorder.Counts;
                output.WriteLine($"transactions ok {counts.Ok}, failed {counts.Failed}, unknown {counts.Unknown}");
                var verification = await Verifier.VerifyAsync(clients, recorder, firstProcess: 1000, TimeSpan.FromSeconds(60));
                output.WriteLine(verification.ToString());
                Assert.True(verification.Converged, "servers diverged");
                Assert.Empty(verification.Lost);
                Assert.True(verification.Check.Valid, verification.Check.ToString());
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
            foreach (var ns in namespaces)
            {
                await RunAsync("ip", "netns", "del", ns);
            }

            await RunAsync("ip", "link", "del", bridge);
            output.WriteLine($"cleaned up after {clock.Elapsed.TotalSeconds:F1} s");
        }
    }

    /// <summary>Why the test cannot run here, or null.</summary>
    private static async Task<string?> UnavailableAsync()
    {
        if (!OperatingSystem.IsLinux())
        {
            return "network namespaces are Linux only";
        }

        if (!Environment.IsPrivilegedProcess)
        {
            return "network namespaces need root";
        }

        // A root that lacks the tools can install them: that fails the test, in one line, rather than passing it.
        MissingPackageException.ThrowIfNotFound("ip", "iproute2");
        MissingPackageException.ThrowIfNotFound("tc", "iproute2");

        var probe = $"hyder-probe-{Guid.NewGuid().ToString("N")[..8]}";
        var (code, text) = await RunAsync("ip", "netns", "add", probe);
        if (code != 0)
        {
            return $"cannot create a network namespace: {text.Trim()}";
        }

        await RunAsync("ip", "netns", "del", probe);
        return null;
    }

    /// <summary>A 10.x.y prefix no interface of this machine uses.</summary>
    private static async Task<string> FreeSubnetAsync()
    {
        var (_, addresses) = await RunAsync("ip", "-o", "-4", "addr", "show");
        while (true)
        {
            var subnet = $"10.{Random.Shared.Next(100, 250)}.{Random.Shared.Next(0, 256)}";
            if (!addresses.Contains($" {subnet}.", StringComparison.Ordinal))
            {
                return subnet;
            }
        }
    }

    private static async Task MustAsync(params string[] command)
    {
        var (code, text) = await RunAsync(command);
        if (code != 0)
        {
            throw new InvalidOperationException($"{string.Join(' ', command)} failed ({code}): {text}");
        }
    }

    private static async Task<(int Code, string Output)> RunAsync(params string[] command)
    {
        var info = new ProcessStartInfo(command[0]) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        foreach (var word in command.Skip(1))
        {
            info.ArgumentList.Add(word);
        }

        using var process = Process.Start(info)!;
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(30));
        return (process.ExitCode, await stdout + await stderr);
    }
}
