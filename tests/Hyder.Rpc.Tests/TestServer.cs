namespace Hyder.Rpc.Tests;

/// <summary>An echo server on 127.0.0.1 (a free port) and a channel to it; both go away on dispose.</summary>
internal sealed class TestServer : IAsyncDisposable
{
    private TestServer(RpcServer server, EchoService service, RpcChannel channel)
    {
        Server = server;
        Service = service;
        Channel = channel;
    }

    public RpcServer Server { get; }

    public EchoService Service { get; }

    public RpcChannel Channel { get; }

    public static async Task<TestServer> StartAsync(Action<RpcServerOptions>? configure = null, RpcChannelOptions? channelOptions = null)
    {
        var service = new EchoService();
        var options = new RpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) };
        configure?.Invoke(options);
        using var startTimeout = new CancellationTokenSource(TimeSpan.FromSeconds(10));
        var server = await RpcServer.StartAsync(service.Register(new RpcServiceRegistry()), options, startTimeout.Token);
        return new TestServer(server, service, new RpcChannel(server.Address, channelOptions));
    }

    public async ValueTask DisposeAsync()
    {
        Channel.Dispose();
        await Server.DisposeAsync();
    }
}
