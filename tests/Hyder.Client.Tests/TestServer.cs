using Hyder.Server.Grpc;

namespace Hyder.Client.Tests;

/// <summary>A fake engine behind HyderService on a HyderGrpcServer on 127.0.0.1 (a free port), and a client of it.</summary>
internal sealed class TestServer : IAsyncDisposable
{
    private TestServer(FakeEngine engine, HyderGrpcServer server, HyderClient client)
    {
        Engine = engine;
        Server = server;
        Client = client;
    }

    public FakeEngine Engine { get; }

    public HyderGrpcServer Server { get; }

    public HyderClient Client { get; }

    public static async Task<TestServer> StartAsync(FakeEngine? engine = null, Func<HyderClientSettings, HyderClientSettings>? configure = null, Action<GrpcServerOptions>? configureServer = null)
    {
        engine ??= new FakeEngine();
        var options = new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2), MaxMessageBytes = engine.Limits.MaxMessageBytes };
        configureServer?.Invoke(options);
        using var startTimeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var server = await HyderGrpcServer.StartAsync(engine, options, startTimeout.Token);
        server.SetServing();
        var settings = new HyderClientSettings { Endpoint = server.Address, Timeout = TimeSpan.FromSeconds(10), RetryDelay = TimeSpan.FromMilliseconds(1), MaxRetryDelay = TimeSpan.FromMilliseconds(20) };
        return new TestServer(engine, server, new HyderClient(configure is null ? settings : configure(settings)));
    }

    public async ValueTask DisposeAsync()
    {
        await Client.DisposeAsync();
        await Server.DisposeAsync();
    }
}
