using Grpc.Core;
using Xunit;

namespace Hyder.Client.Tests.Server;

/// <summary>Kestrel's limits and the per-address connection cap, as HyderGrpcServer applies GrpcServerLimits.</summary>
public sealed class LimitTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ConnectionsPastTheCapAreRefusedWhileOpenOnesWork(bool perAddress)
    {
        await using var server = await TestServer.StartAsync(configureServer: o =>
        {
            o.Limits.MaxConnections = perAddress ? null : 2;
            o.Limits.MaxConnectionsPerAddress = perAddress ? 2 : null;
        });
        HyderClient Connect() => new(new HyderClientSettings { Endpoint = server.Server.Address, Timeout = TimeSpan.FromSeconds(10), MaxRetries = 0 });
        await using var first = Connect();
        await using var second = Connect();
        await first.GetStatusAsync();
        await second.GetStatusAsync();

        await using (var third = Connect())
        {
            var e = await Assert.ThrowsAsync<HyderException>(() => third.GetStatusAsync());
            Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        }

        await first.GetStatusAsync();
        await second.GetStatusAsync();

        // A closed connection frees its place once the server sees the close.
        await first.DisposeAsync();
        await using var fourth = Connect();
        for (var attempt = 0; ; attempt++)
        {
            try
            {
                await fourth.GetStatusAsync();
                break;
            }
            catch (HyderException e) when (e.StatusCode == StatusCode.Unavailable && attempt < 200)
            {
                await Task.Delay(50);
            }
        }
    }

    [Fact]
    public async Task OversizedHeadersFailTheCallAndOtherCallsSucceed()
    {
        await using var server = await TestServer.StartAsync(configureServer: o => o.Limits.MaxHeaderBytes = 4096);
        await using var bloated = new HyderClient(new HyderClientSettings { Endpoint = server.Server.Address, Token = new string('p', 8192), MaxRetries = 0 });
        var e = await Assert.ThrowsAsync<HyderException>(() => bloated.GetStatusAsync());
        Assert.NotEqual(StatusCode.OK, e.StatusCode);
        await server.Client.GetStatusAsync();
    }

    [Fact]
    public async Task AnOversizedRequestIsResourceExhaustedAndTheConnectionStaysUsable()
    {
        await using var server = await TestServer.StartAsync(configureServer: o => o.MaxMessageBytes = 64 * 1024);
        var e = await Assert.ThrowsAsync<HyderException>(() => server.Client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put("big"u8.ToArray(), new byte[100 * 1024])]));
        Assert.Equal(StatusCode.ResourceExhausted, e.StatusCode);
        Assert.Null(server.Engine.Peek("big"u8.ToArray()));
        await server.Client.GetStatusAsync();
    }
}
