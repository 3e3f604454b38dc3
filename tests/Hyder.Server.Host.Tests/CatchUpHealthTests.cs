using Hyder.Testing;
using Grpc.Core;
using Grpc.Health.V1;
using Grpc.Net.Client;
using Hyder.Log;
using Hyder.Log.Embedded;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Server.Grpc;
using Xunit;
using V1 = Hyder.Api.V1;
using ServingStatus = Grpc.Health.V1.HealthCheckResponse.Types.ServingStatus;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// What hyder-server does at start (ServerHostService): the listener opens first, health says
/// NOT_SERVING while the transaction server melds the log up to the tail it saw at start, the Hyder
/// methods answer UNAVAILABLE, and once it has caught up health says SERVING.
/// </summary>
public sealed class CatchUpHealthTests
{
    private const int Transactions = 40;

    [Fact]
    public async Task HealthIsNotServingWhileTheServerCatchesUpWithTheLogThenServing()
    {
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        var settings = new ClusterSettings();

        // A first server leaves intentions in the log that a new server must meld before it serves.
        await using (var first = await TransactionServer.StartAsync(log, new ServerOptions { ServerId = "first", Cluster = settings }))
        {
            for (var i = 0; i < Transactions; i++)
            {
                var outcome = await first.ExecuteAsync(Tree.IsolationLevel.Serializable, [Operation.Put([(byte)i], [(byte)i])]);
                Assert.Equal(TransactionStatus.Committed, outcome.Status);
            }
        }

        var tail = await log.TailAsync();
        var gated = new GatedLog(log, holdFrom: tail / 2);
        await using var rpc = await HyderGrpcServer.StartAsync(new GrpcServerOptions { ShutdownTimeout = TimeSpan.FromSeconds(2) });
        using var channel = GrpcChannel.ForAddress(rpc.Address);
        var health = new Health.HealthClient(channel);
        var hyder = new V1.Hyder.HyderClient(channel);
        using var watch = health.Watch(new HealthCheckRequest { Service = HyderGrpcServer.ServiceName });
        Assert.Equal(ServingStatus.NotServing, await NextAsync(watch));

        // The second server is half-way through the log, held at a read.
        var starting = TransactionServer.StartAsync(gated, new ServerOptions { ServerId = "second", Cluster = settings });
        var held = await gated.Held.WaitAsync(TimeSpan.FromSeconds(30));
        Assert.InRange(held, tail / 2, tail - 1);
        Assert.False(starting.IsCompleted);
        Assert.Equal(ServingStatus.NotServing, (await health.CheckAsync(new HealthCheckRequest())).Status);
        Assert.Equal(ServingStatus.NotServing, (await health.CheckAsync(new HealthCheckRequest { Service = HyderGrpcServer.ServiceName })).Status);
        var early = await Assert.ThrowsAsync<RpcException>(async () => await hyder.StatusAsync(new V1.StatusRequest()));
        Assert.Equal(StatusCode.Unavailable, early.StatusCode);
        Assert.Contains("catching up with the log", early.Status.Detail, StringComparison.Ordinal);

        gated.Release();
        await using var server = await starting.WaitAsync(TimeSpan.FromSeconds(30));
        rpc.Serve(server);
        Assert.Equal(ServingStatus.Serving, await NextAsync(watch));
        var status = await hyder.StatusAsync(new V1.StatusRequest());
        Assert.Equal("second", status.ServerId);
        Assert.True(status.LastMelded >= Transactions, $"melded {status.LastMelded} of {Transactions} transactions");
        var read = await hyder.ReadAsync(new V1.ReadRequest { Keys = { Google.Protobuf.ByteString.CopyFrom([Transactions - 1]) } });
        Assert.True(read.Results[0].Found);

        var stopping = rpc.StopAsync();
        Assert.Equal(ServingStatus.NotServing, await NextAsync(watch));
        await stopping;
    }

    [Fact]
    public async Task AServerGivenNoEngineCannotBeSetServingAndTakesOneEngineOnly()
    {
        await using var rpc = await HyderGrpcServer.StartAsync(new GrpcServerOptions());
        Assert.Throws<InvalidOperationException>(rpc.SetServing);
        await using var log = await EmbeddedLog.OpenAsync(new EmbeddedLogOptions());
        await using var server = await TransactionServer.StartAsync(log, new ServerOptions { ServerId = "only", Cluster = new ClusterSettings() });
        rpc.Serve(server);
        Assert.Throws<InvalidOperationException>(() => rpc.Serve(server));
    }

    private static async Task<ServingStatus> NextAsync(AsyncServerStreamingCall<HealthCheckResponse> watch)
    {
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(30));
        Assert.True(await watch.ResponseStream.MoveNext(timeout.Token));
        return watch.ResponseStream.Current.Status;
    }

    /// <summary>A log whose reads at or past <c>holdFrom</c> wait until <see cref="Release"/>; <see cref="Held"/> tells the first such address.</summary>
    private sealed class GatedLog(ISharedLog inner, long holdFrom) : DelegatingLog(inner)
    {
        private readonly TaskCompletionSource<long> _held = new(TaskCreationOptions.RunContinuationsAsynchronously);
        private readonly TaskCompletionSource _released = new(TaskCreationOptions.RunContinuationsAsynchronously);

        public Task<long> Held => _held.Task;

        public void Release() => _released.TrySetResult();

        public override async ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default)
        {
            if (address >= holdFrom)
            {
                _held.TrySetResult(address);
                await _released.Task.WaitAsync(cancellationToken).ConfigureAwait(false);
            }

            return await Inner.ReadAsync(address, destination, cancellationToken).ConfigureAwait(false);
        }

    }
}
