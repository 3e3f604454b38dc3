using System.Buffers.Binary;
using System.Diagnostics;
using System.Globalization;
using Grpc.Core;
using Grpc.Net.Client;
using Grpc.Net.Client.Balancer;
using Grpc.Net.Client.Configuration;
using Hyder.Client;
using Hyder.Server.Cluster;
using Hyder.Tree.Pipeline;
using Microsoft.Extensions.DependencyInjection;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// Read your writes across servers (docs/api.md): two servers on one log behind gRPC, and one
/// session of two clients that alternates between them: each transaction writes a counter on one
/// server, then reads it on the other. With the token no read returns an older value than the
/// session's own last write; without it, a server that lags answers from before the write.
/// </summary>
public sealed class ReadYourWritesClusterTests(ITestOutputHelper output)
{
    private static readonly byte[] s_key = "read-your-writes"u8.ToArray();

    [Fact]
    public async Task AClientAlternatingBetweenTwoServersNeverReadsAnOlderValueThanItsOwnLastWrite()
    {
        var run = await AlternateAsync(1_000, readYourWrites: true, lagging: true);
        Assert.Equal(0, run.Stale);
    }

    /// <summary>The control: the same run with the token off reads stale values from the lagging server, so the test above proves the wait matters.</summary>
    [Fact]
    public async Task WithoutTheTokenTheLaggingServerAnswersReadsFromBeforeTheClientsWrite()
    {
        var run = await AlternateAsync(200, readYourWrites: false, lagging: true);
        Assert.True(run.Stale > 0, "no stale read without the token: the second server did not lag");
    }

    /// <summary>
    /// One client object whose channel balances calls round robin over both servers (the gRPC
    /// client's own load balancing): its own session is enough, nothing is shared by hand. Round
    /// robin sends every write to one server and every read to the other, and which is which is
    /// not ours to choose: when the reads land on the server whose meld is not slowed, a peer's
    /// broadcast block wakes its reader at once and it is rarely behind, so this test asserts the
    /// guarantee and that the calls did alternate; the control that the token matters is
    /// <see cref="WithoutTheTokenTheLaggingServerAnswersReadsFromBeforeTheClientsWrite"/>.
    /// </summary>
    [Fact]
    public async Task OneClientWhoseCallsAlternateBetweenServersReadsItsOwnWrites()
    {
        await using var cluster = await LaggingClusterAsync();
        var handler = new SocketsHttpHandler { EnableMultipleHttp2Connections = true };
        var services = new ServiceCollection();
        services.AddSingleton<ResolverFactory>(new StaticResolverFactory(_ => cluster.Addresses.Select(a => new BalancerAddress(a.Host, a.Port)).ToArray()));
        using var provider = services.BuildServiceProvider();
        using var channel = GrpcChannel.ForAddress("static:///hyder", new GrpcChannelOptions
        {
            HttpHandler = handler,
            Credentials = ChannelCredentials.Insecure,
            ServiceConfig = new ServiceConfig { LoadBalancingConfigs = { new RoundRobinConfig() } },
            ServiceProvider = provider,
        });
        var settings = new HyderClientSettings { Endpoint = cluster.Addresses[0], Timeout = TimeSpan.FromSeconds(20), MaxRetries = 100, ReadYourWrites = true };
        await using var client = new HyderClient(settings, new Api.V1.Hyder.HyderClient(channel));
        var run = new Run();
        const int Transactions = 300;
        await AlternateAsync([client, client], run, s_key, Transactions);
        var calls = cluster.Servers.Select(s => s.Metrics.Appended + s.Metrics.ReadOnlyCommits).ToArray();
        output.WriteLine($"one balanced client: {run}; calls per server (writes + reads): {string.Join(", ", calls)}");
        Assert.Equal(0, run.Stale);
        Assert.All(calls, c => Assert.True(c >= Transactions / 2, $"calls per server {string.Join(", ", calls)}: the client did not alternate between the servers"));
    }

    [Fact]
    [Trait("Category", "Stress")]
    public async Task TenThousandAlternatingTransactionsNeverReadAnOlderValueThanTheirOwnLastWrite()
    {
        var run = await AlternateAsync(10_000, readYourWrites: true, lagging: true);
        Assert.Equal(0, run.Stale);
    }

    /// <summary>
    /// The latency of a read on the other server right after a write, with and without the token,
    /// on servers that do not lag on purpose: blocks of 100 write-then-read pairs, the two modes
    /// taking turns in one run so that both see the same machine load (docs/api.md gives the numbers).
    /// </summary>
    [Fact]
    [Trait("Category", "Stress")]
    public async Task TheTokenCostsAReadAfterAWriteOnlyTheOtherServersMeldLag()
    {
        const int Blocks = 30;
        const int PerBlock = 100;
        await using var cluster = await InProcessCluster.StartAsync(2, new ClusterSettings());
        var on = Clients(cluster, readYourWrites: true);
        var off = Clients(cluster, readYourWrites: false);
        var onRun = new Run();
        var offRun = new Run();
        try
        {
            for (var b = 0; b < Blocks; b++)
            {
                await AlternateAsync(on, onRun, "on"u8.ToArray(), PerBlock);
                await AlternateAsync(off, offRun, "off"u8.ToArray(), PerBlock);
            }
        }
        finally
        {
            await DisposeAsync(on);
            await DisposeAsync(off);
        }

        output.WriteLine($"token on:  {onRun}");
        output.WriteLine($"token off: {offRun}");
        Assert.Equal(0, onRun.Stale);
    }

    private async Task<Run> AlternateAsync(int transactions, bool readYourWrites, bool lagging)
    {
        await using var cluster = lagging ? await LaggingClusterAsync() : await InProcessCluster.StartAsync(2, new ClusterSettings());
        var clients = Clients(cluster, readYourWrites);
        var run = new Run();
        try
        {
            await AlternateAsync(clients, run, s_key, transactions);
        }
        finally
        {
            await DisposeAsync(clients);
        }

        output.WriteLine($"{transactions} transactions, token {(readYourWrites ? "on" : "off")}: {run}");
        return run;
    }

    /// <summary>Two servers; the second one's final meld sleeps 1 ms before each ordinal, so it lags the first.</summary>
    private static Task<InProcessCluster> LaggingClusterAsync() =>
        InProcessCluster.StartAsync(2, new ClusterSettings(), (i, o) =>
        {
            if (i == 1)
            {
                o.StageDelay = (stage, _) =>
                {
                    if (stage == PipelineStage.FinalMeld)
                    {
                        Thread.Sleep(1);
                    }
                };
            }
        });

    /// <summary>Transaction i writes i on server i mod 2 and reads it back on the other server.</summary>
    private static async Task AlternateAsync(HyderClient[] clients, Run run, byte[] key, int transactions)
    {
        for (var i = 0; i < transactions; i++)
        {
            var written = run.Next++;
            var writer = clients[i % 2];
            var reader = clients[(i + 1) % 2];

            // Read committed: a blind put never aborts, even on a snapshot that lags.
            await writer.ExecuteAsync(IsolationLevel.ReadCommitted, [HyderOperation.Put(key, Encode(written))]);
            var started = Stopwatch.GetTimestamp();
            var read = await reader.ReadAsync([key]);
            run.Latencies.Add(Stopwatch.GetElapsedTime(started).TotalMilliseconds);
            var seen = read[0] is { } v ? BinaryPrimitives.ReadInt64LittleEndian(v) : -1;
            if (seen < written)
            {
                run.Stale++;
            }
        }
    }

    /// <summary>Two clients, one per server, sharing one session (one causal token).</summary>
    private static HyderClient[] Clients(InProcessCluster cluster, bool readYourWrites)
    {
        var session = new HyderSession();
        return cluster.Addresses.Select(a => new HyderClient(new HyderClientSettings
        {
            Endpoint = a,
            Timeout = TimeSpan.FromSeconds(20),
            MaxRetries = 100,
            RetryDelay = TimeSpan.FromMilliseconds(1),
            MaxRetryDelay = TimeSpan.FromMilliseconds(10),
            ReadYourWrites = readYourWrites,
            Session = session,
        })).ToArray();
    }

    private static async Task DisposeAsync(HyderClient[] clients)
    {
        foreach (var c in clients)
        {
            await c.DisposeAsync();
        }
    }

    private static byte[] Encode(long v)
    {
        var b = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(b, v);
        return b;
    }

    private sealed class Run
    {
        public long Next { get; set; }

        public int Stale { get; set; }

        public List<double> Latencies { get; } = [];

        public override string ToString()
        {
            var sorted = Latencies.Order().ToArray();
            double P(double q) => sorted.Length == 0 ? 0 : sorted[Math.Min(sorted.Length - 1, (int)Math.Ceiling(q * sorted.Length) - 1)];
            return string.Create(CultureInfo.InvariantCulture, $"{sorted.Length} reads after a write on the other server, {Stale} stale; read latency p50 {P(0.50):0.000} ms, p99 {P(0.99):0.000} ms, max {(sorted.Length == 0 ? 0 : sorted[^1]):0.000} ms");
        }
    }
}
