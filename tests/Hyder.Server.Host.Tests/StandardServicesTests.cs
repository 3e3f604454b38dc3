using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Grpc.Reflection.V1Alpha;
using Xunit;

namespace Hyder.Server.Host.Tests;

/// <summary>hyder-server's grpc.health.v1.Health (on by default) and server reflection (--grpc-reflection on).</summary>
public sealed class StandardServicesTests
{
    [Fact]
    public async Task HealthIsServingOnceTheServerIsReadyAndReflectionIsOffByDefault()
    {
        await using var server = await ServerProcess.StartAsync("--embedded", "--listen", "http://127.0.0.1:0");
        using var channel = GrpcChannel.ForAddress(server.Address);
        var health = await new Health.HealthClient(channel).CheckAsync(new HealthCheckRequest { Service = "hyder.v1.Hyder" });
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, health.Status);

        // The server answers a method it does not serve at once, whatever the client sends, so
        // nothing is sent: a request written while that answer arrived raced it, and its write
        // failed as Cancelled instead (a CI run, 2026-11-27). The deadline makes a server that
        // does serve reflection fail the test (DeadlineExceeded) instead of waiting for a request.
        using var call = new ServerReflection.ServerReflectionClient(channel).ServerReflectionInfo(deadline: DateTime.UtcNow.AddSeconds(20));
        var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
        Assert.Equal(StatusCode.Unimplemented, e.StatusCode);
    }

    [Fact]
    public async Task GrpcReflectionOnListsTheServices()
    {
        await using var server = await ServerProcess.StartAsync("--embedded", "--listen", "http://127.0.0.1:0", "--grpc-reflection", "on");
        using var channel = GrpcChannel.ForAddress(server.Address);
        using var call = new ServerReflection.ServerReflectionClient(channel).ServerReflectionInfo();
        await call.RequestStream.WriteAsync(new ServerReflectionRequest { ListServices = string.Empty });
        Assert.True(await call.ResponseStream.MoveNext());
        Assert.Contains("hyder.v1.Hyder", call.ResponseStream.Current.ListServicesResponse.Service.Select(s => s.Name));
        await call.RequestStream.CompleteAsync();
    }
}
