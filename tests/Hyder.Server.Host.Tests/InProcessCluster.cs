using System.Net;
using Hyder.Client;
using Hyder.Log.Embedded;
using Hyder.Server.Broadcast;
using Hyder.Server.Cluster;
using Hyder.Server.Grpc;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// Transaction servers on one in-memory embedded log, in this process, each with its own broadcast
/// hub (every hub sends to every other) and its own gRPC server; what hyder-server runs, times n.
/// </summary>
internal sealed class InProcessCluster : IAsyncDisposable
{
    private readonly EmbeddedLog _log;
    private readonly List<(BroadcastHub Hub, TransactionServer Server, HyderGrpcServer Rpc)> _nodes = [];

    private InProcessCluster(EmbeddedLog log) => _log = log;

    public IReadOnlyList<TransactionServer> Servers => _nodes.Select(n => n.Server).ToArray();

    public IReadOnlyList<BroadcastHub> Hubs => _nodes.Select(n => n.Hub).ToArray();

    public IReadOnlyList<Uri> Addresses => _nodes.Select(n => n.Rpc.Address).ToArray();

    /// <summary>Starts <paramref name="servers"/> servers; <paramref name="configure"/> may change each one's options (by index from 0).</summary>
    public static async Task<InProcessCluster> StartAsync(int servers, ClusterSettings settings, Action<int, ServerOptions>? configure = null)
    {
        var cluster = new InProcessCluster(await EmbeddedLog.OpenAsync(new EmbeddedLogOptions()));
        try
        {
            var hubs = new List<BroadcastHub>();
            for (var i = 0; i < servers; i++)
            {
                var hub = new BroadcastHub(new BroadcastOptions
                {
                    ClusterId = "host-tests",
                    ServerId = $"server-{i + 1}",
                    Listen = new IPEndPoint(IPAddress.Loopback, 0),
                    ReconnectInitialDelay = TimeSpan.FromMilliseconds(10),
                    ReconnectMaxDelay = TimeSpan.FromMilliseconds(100),
                });
                await hub.StartAsync();
                hubs.Add(hub);
            }

            foreach (var hub in hubs)
            {
                foreach (var other in hubs.Where(h => h != hub))
                {
                    hub.AddPeer(other.LocalEndPoint);
                }
            }

            using var connected = new CancellationTokenSource(TimeSpan.FromSeconds(10));
            while (hubs.Any(h => h.ConnectedPeers < servers - 1))
            {
                await Task.Delay(5, connected.Token);
            }

            foreach (var hub in hubs)
            {
                var options = new ServerOptions { ServerId = hub.Options.ServerId, Cluster = settings, MaxInFlight = 64 };
                configure?.Invoke(cluster._nodes.Count, options);
                var server = await TransactionServer.StartAsync(cluster._log, options, new BroadcastHubAdapter(hub));
                var rpc = await HyderGrpcServer.StartAsync(server, new GrpcServerOptions { MaxMessageBytes = options.Limits.MaxMessageBytes });
                cluster._nodes.Add((hub, server, rpc));
            }
        }
        catch
        {
            await cluster.DisposeAsync();
            throw;
        }

        return cluster;
    }

    public static HyderClient Client(Uri address) => new(new HyderClientSettings
    {
        Endpoint = address,
        Timeout = TimeSpan.FromSeconds(20),
        MaxRetries = 10_000,
        RetryDelay = TimeSpan.FromMilliseconds(1),
        MaxRetryDelay = TimeSpan.FromMilliseconds(10),
    });

    /// <summary>The same order hyder-server stops in: gRPC, then the server, then broadcast, then the log.</summary>
    public async ValueTask DisposeAsync()
    {
        foreach (var (_, _, rpc) in _nodes)
        {
            await rpc.DisposeAsync();
        }

        foreach (var (_, server, _) in _nodes)
        {
            await server.DisposeAsync();
        }

        foreach (var (hub, _, _) in _nodes)
        {
            await hub.DisposeAsync();
        }

        await _log.DisposeAsync();
    }
}
