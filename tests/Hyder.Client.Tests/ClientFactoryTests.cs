using Hyder.Server.Grpc;
using Microsoft.Extensions.DependencyInjection;
using Xunit;
using static Hyder.Client.Tests.Bytes;

namespace Hyder.Client.Tests;

/// <summary>services.AddHyderClient registers a HyderClient whose stub comes from Grpc.Net.ClientFactory.</summary>
public sealed class ClientFactoryTests
{
    [Fact]
    public async Task AddHyderClientResolvesOneClientThatTalksToTheServerWithItsToken()
    {
        var keys = new Hyder.Security.ApiKeyStore();
        var token = Hyder.Security.ApiKeyStore.NewToken();
        keys.AddLine(Hyder.Security.ApiKeyStore.Line("app", Hyder.Security.ClientRole.Writer, token));
        await using var server = await HyderGrpcServer.StartAsync(new FakeEngine(), new GrpcServerOptions { Authenticator = new ClientAuthenticator { ApiKeys = keys } });

        var services = new ServiceCollection();
        var handlers = 0;
        services.AddHyderClient($"Endpoint={server.Address};Token={token};Timeout=10")
            .ConfigurePrimaryHttpMessageHandler(() =>
            {
                Interlocked.Increment(ref handlers);
                return new SocketsHttpHandler();
            });
        await using var provider = services.BuildServiceProvider();
        var client = provider.GetRequiredService<HyderClient>();
        Assert.Same(client, provider.GetRequiredService<HyderClient>());

        await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Of("di"), Of("yes"))]);
        Assert.Equal("yes", Text((await client.ReadAsync([Of("di")]))[0]));
        Assert.Equal(TimeSpan.FromSeconds(10), client.Settings.Timeout);

        // The channel's handler is the factory's: the builder's configuration reached it.
        Assert.Equal(1, handlers);
    }
}
