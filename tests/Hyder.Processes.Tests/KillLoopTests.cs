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
/// Log units and transaction servers as real child processes under a list-append load, killed with
/// SIGKILL at random (seeded) moments and restarted: nothing acknowledged is lost, every server
/// reaches the same state hash at the same ordinal, and the history is serializable.
/// HYDER_KILL_SEED replays a seed; HYDER_KILLS sets the stress run's kill count.
/// </summary>
[Collection(RealProcesses.Name)]
public sealed class KillLoopTests(ITestOutputHelper output)
{
    [Fact]
    public Task ServersAndLogUnitsKilledUnderLoadLoseNothingAndConverge() => RunAsync(kills: 6, TimeSpan.FromSeconds(2.5), killSequencer: false);

    /// <summary>The sequencer too: a restarted sequencer seals the units and starts a new epoch above their tails.</summary>
    [Fact]
    [Trait("Category", "Stress")]
    public Task ManyKillsLoseNothingAndConverge() =>
        RunAsync(kills: int.Parse(Environment.GetEnvironmentVariable("HYDER_KILLS") ?? "100", CultureInfo.InvariantCulture), TimeSpan.FromSeconds(4), killSequencer: true);

    private async Task RunAsync(int kills, TimeSpan maxInterval, bool killSequencer)
    {
        var seed = Environment.GetEnvironmentVariable("HYDER_KILL_SEED") is { Length: > 0 } s ? int.Parse(s, CultureInfo.InvariantCulture) : Random.Shared.Next();
        output.WriteLine($"seed {seed} (HYDER_KILL_SEED={seed} replays the choices), {kills} kills");
        using var directory = new TempDirectory("hyder-kill-");
        await using var cluster = LocalCluster.Create(new LocalClusterOptions
        {
            Directory = directory.Path,
            Units = 2,
            Replicas = 2,
            Servers = 2,
            Hosts = HostBinaries.FromRepository(),
            // Restarts load a checkpoint and meld the rest, not only the whole log.
            ServerArguments = ["--checkpoint-every", "500"],
        });
        var clock = Stopwatch.StartNew();
        await cluster.StartAsync();
        output.WriteLine($"cluster up in {clock.Elapsed.TotalSeconds:F1} s: {string.Join(", ", cluster.All.Select(p => $"{p.Name} {p.Endpoint}"))}");

        var clients = cluster.Servers.Select(p => new HyderClient(new HyderClientSettings { Endpoint = new Uri(p.Endpoint), Timeout = TimeSpan.FromSeconds(10) })).ToArray();
        try
        {
            var recorder = new HistoryRecorder();
            var workload = new ListAppendWorkload(recorder, seed);
            using var stop = new CancellationTokenSource();
            var load = workload.RunAsync(clients, processes: 6, firstProcess: 0, stop.Token);
            var loop = new KillLoop([.. cluster.Units, .. cluster.Servers, .. killSequencer ? [cluster.Sequencer] : Array.Empty<ClusterProcess>()], new KillLoopOptions { Seed = seed, MaxKills = kills, MinInterval = TimeSpan.FromSeconds(0.5), MaxInterval = maxInterval }, Log);
            try
            {
                await loop.RunAsync(CancellationToken.None);

                // Load after the last restart, so the last victim serves again before the end.
                await Task.Delay(TimeSpan.FromSeconds(2));
            }
            finally
            {
                await stop.CancelAsync();
                await load;
            }

            var counts = recorder.Counts;
            output.WriteLine($"{loop.Kills.Count} kills in {clock.Elapsed.TotalSeconds:F1} s ({string.Join(", ", loop.Kills.GroupBy(k => k.Victim).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => $"{g.Key} {g.Count()}"))}); transactions ok {counts.Ok}, failed {counts.Failed}, unknown {counts.Unknown}");
            var verification = await Verifier.VerifyAsync(clients, recorder, firstProcess: 1000, TimeSpan.FromSeconds(90));
            output.WriteLine(verification.ToString());

            Assert.Equal(kills, loop.Kills.Count);
            Assert.True(counts.Ok >= 20, $"only {counts.Ok} transactions committed: the load did not run");
            Assert.True(verification.Converged, "servers diverged");
            Assert.Empty(verification.Lost);
            Assert.True(verification.Check.Valid, verification.Check.ToString());
        }
        catch
        {
            foreach (var process in cluster.All)
            {
                output.WriteLine($"--- {process.Name} (started {process.Starts} times), last lines:\n{process.Tail}");
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

        void Log(string line) => output.WriteLine(line);
    }
}
