using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Grpc.Reflection.V1Alpha;
using Hyder.Server.Grpc;
using Xunit;

namespace Hyder.Client.Tests.Server;

/// <summary>grpc.health.v1.Health follows the server's life; reflection answers only when it is turned on.</summary>
public sealed class HealthAndReflectionTests
{
    [Fact]
    public async Task HealthIsNotServingUntilTheServerSaysSoAndNotServingAgainOnceItStops()
    {
        await using var server = await HyderGrpcServer.StartAsync(new FakeEngine(), new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) });
        using var channel = GrpcChannel.ForAddress(server.Address);
        var health = new Health.HealthClient(channel);
        foreach (var service in new[] { string.Empty, HyderGrpcServer.ServiceName })
        {
            Assert.Equal(HealthCheckResponse.Types.ServingStatus.NotServing, (await health.CheckAsync(new HealthCheckRequest { Service = service })).Status);
        }

        var unknown = await Assert.ThrowsAsync<RpcException>(async () => await health.CheckAsync(new HealthCheckRequest { Service = "no.such.Service" }));
        Assert.Equal(StatusCode.NotFound, unknown.StatusCode);

        server.SetServing();
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, (await health.CheckAsync(new HealthCheckRequest())).Status);

        // A watcher sees SERVING now and NOT_SERVING as soon as the server starts to stop.
        using var watch = health.Watch(new HealthCheckRequest { Service = HyderGrpcServer.ServiceName });
        Assert.True(await watch.ResponseStream.MoveNext());
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, watch.ResponseStream.Current.Status);
        var stopping = server.StopAsync();
        Assert.True(await watch.ResponseStream.MoveNext());
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.NotServing, watch.ResponseStream.Current.Status);
        await stopping;
    }

    [Fact]
    public async Task HealthNeedsNoCredentialsWhereTheHyderServiceDoes()
    {
        var authenticator = new ClientAuthenticator { AnonymousRole = Hyder.Security.ClientRole.None };
        await using var server = await HyderGrpcServer.StartAsync(new FakeEngine(), new GrpcServerOptions { Authenticator = authenticator });
        server.SetServing();
        using var channel = GrpcChannel.ForAddress(server.Address);
        Assert.Equal(HealthCheckResponse.Types.ServingStatus.Serving, (await new Health.HealthClient(channel).CheckAsync(new HealthCheckRequest())).Status);
        var e = await Assert.ThrowsAsync<RpcException>(async () => await new Api.V1.Hyder.HyderClient(channel).StatusAsync(new Api.V1.StatusRequest()));
        Assert.Equal(StatusCode.Unauthenticated, e.StatusCode);
    }

    [Theory]
    [InlineData(true)]
    [InlineData(false)]
    public async Task ReflectionListsTheServicesOnlyWhenTurnedOn(bool on)
    {
        await using var server = await HyderGrpcServer.StartAsync(new FakeEngine(), new GrpcServerOptions { Reflection = on });
        using var channel = GrpcChannel.ForAddress(server.Address);
        using var call = new ServerReflection.ServerReflectionClient(channel).ServerReflectionInfo();
        if (!on)
        {
            // The server ends an unknown method's call with UNIMPLEMENTED as soon as it sees the
            // call, so a request written after that may itself fail (CANCELLED): read the status alone.
            var e = await Assert.ThrowsAsync<RpcException>(() => call.ResponseStream.MoveNext());
            Assert.Equal(StatusCode.Unimplemented, e.StatusCode);
            return;
        }

        await call.RequestStream.WriteAsync(new ServerReflectionRequest { ListServices = string.Empty });
        Assert.True(await call.ResponseStream.MoveNext());
        var names = call.ResponseStream.Current.ListServicesResponse.Service.Select(s => s.Name).ToArray();
        Assert.Contains("hyder.v1.Hyder", names);
        Assert.Contains("grpc.health.v1.Health", names);

        // The descriptor of the Hyder service, so a tool can build requests.
        await call.RequestStream.WriteAsync(new ServerReflectionRequest { FileContainingSymbol = "hyder.v1.Hyder" });
        Assert.True(await call.ResponseStream.MoveNext());
        var file = Google.Protobuf.Reflection.FileDescriptorProto.Parser.ParseFrom(call.ResponseStream.Current.FileDescriptorResponse.FileDescriptorProto[0]);
        Assert.Equal("hyder.v1", file.Package);
        Assert.Contains(file.Service.Single().Method, m => m.Name == "Transact" && m.ClientStreaming && m.ServerStreaming);
        await call.RequestStream.CompleteAsync();
    }
}
