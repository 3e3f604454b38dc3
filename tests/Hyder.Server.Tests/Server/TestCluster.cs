using Hyder.Log.Embedded;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;

namespace Hyder.Server.Tests.Server;

/// <summary>An in-memory log and a few transaction servers on it, all in this process.</summary>
internal sealed class TestCluster : IAsyncDisposable
{
    private TestCluster(EmbeddedLog log, ClusterSettings settings)
    {
        Log = log;
        Settings = settings;
    }

    public EmbeddedLog Log { get; }

    public ClusterSettings Settings { get; }

    public List<TransactionServer> Servers { get; } = [];

    public static async Task<TestCluster> StartAsync(int servers, ClusterSettings settings, Action<ServerOptions>? configure = null, EmbeddedLog? log = null)
    {
        log ??= await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        var cluster = new TestCluster(log, settings);
        for (var i = 0; i < servers; i++)
        {
            await cluster.AddServerAsync(configure);
        }

        return cluster;
    }

    public async Task<TransactionServer> AddServerAsync(Action<ServerOptions>? configure = null)
    {
        var options = Options($"server-{Servers.Count + 1}", Settings);
        configure?.Invoke(options);
        var server = await TransactionServer.StartAsync(Log, options);
        Servers.Add(server);
        return server;
    }

    public static ServerOptions Options(string id, ClusterSettings settings) => new()
    {
        ServerId = id,
        Cluster = settings,
        MaxInFlight = 64,
        FillerAfter = TimeSpan.FromMilliseconds(1),
    };

    /// <summary>
    /// Waits until every server has melded everything in the log, then returns their hashes. A
    /// filler or maintenance flush that lands while the hashes are taken starts the wait again,
    /// so hashes at different ordinals mean the servers disagree about the log, not a race.
    /// </summary>
    public async Task<StateHash[]> QuiesceAsync(TimeSpan? timeout = null)
    {
        using var cts = new CancellationTokenSource(timeout ?? TimeSpan.FromSeconds(60));
        while (true)
        {
            var (hashes, tail) = await QuiesceOnceAsync(cts.Token);
            if (hashes.All(h => h.Ordinal == hashes[0].Ordinal) || await Log.TailAsync(cts.Token) == tail)
            {
                return hashes;
            }
        }
    }

    private async Task<(StateHash[] Hashes, long Tail)> QuiesceOnceAsync(CancellationToken cancellationToken)
    {
        var tail = await Log.TailAsync(cancellationToken);
        while (true)
        {
            // Every server has read to the tail and melded what it read.
            var ready = Servers.All(s => s.ReadPosition >= tail && s.LastMelded >= s.LastRead);
            if (ready)
            {
                var newTail = await Log.TailAsync(cancellationToken);
                if (newTail == tail)
                {
                    break;
                }

                tail = newTail;
            }

            await Task.Delay(5, cancellationToken);
        }

        var hashes = new StateHash[Servers.Count];
        for (var i = 0; i < hashes.Length; i++)
        {
            hashes[i] = await Servers[i].GetStateHashAsync(0, cancellationToken);
        }

        return (hashes, tail);
    }

    public async ValueTask DisposeAsync()
    {
        foreach (var s in Servers)
        {
            await s.DisposeAsync();
        }

        await Log.DisposeAsync();
    }

    public static byte[] Key(int i) => [(byte)(i >> 24), (byte)(i >> 16), (byte)(i >> 8), (byte)i];

    public static byte[] Value(string s) => System.Text.Encoding.UTF8.GetBytes(s);
}
