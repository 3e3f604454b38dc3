using Hyder.Log.Layout;
using Hyder.Log.Transport;
using Xunit;

namespace Hyder.Log.Tests;

public sealed class ProjectionStoreTests
{
    private static Projection Layout(long epoch, string tag) => new()
    {
        Epoch = epoch,
        Sequencer = "127.0.0.1:1",
        Ranges = [new LayoutRange { Start = 0, Chains = [["127.0.0.1:2", tag]] }],
    };

    /// <summary>Eight administrators race for each of five epochs; exactly one wins each.</summary>
    private static async Task ExactlyOneProjectionWinsEachEpoch(Func<IProjectionStore> open)
    {
        for (var epoch = 1; epoch <= 5; epoch++)
        {
            var racers = Enumerable.Range(0, 8).Select(i => Task.Run(() => open().TryInstallAsync(Layout(epoch, $"127.0.0.1:{100 + i}")))).ToArray();
            var results = await Task.WhenAll(racers);
            Assert.Equal(1, results.Count(r => r));
            var winner = Array.IndexOf(results, true);
            var latest = await open().GetLatestAsync();
            Assert.Equal(epoch, latest!.Epoch);
            Assert.Equal($"127.0.0.1:{100 + winner}", latest.Ranges[0].Chains[0][1]);
        }

        Assert.False(await open().TryInstallAsync(Layout(7, "127.0.0.1:9")));
        Assert.False(await open().TryInstallAsync(Layout(3, "127.0.0.1:9")));
    }

    [Fact]
    public async Task FileProjectionStoreAcceptsExactlyOneProjectionPerEpoch()
    {
        using var dir = new TempDirectory();
        Assert.Null(await new FileProjectionStore(dir.Path).GetLatestAsync());
        await ExactlyOneProjectionWinsEachEpoch(() => new FileProjectionStore(dir.Path));
    }

    [Fact]
    public async Task EtcdProjectionStoreAcceptsExactlyOneProjectionPerEpoch()
    {
        await using var etcd = await EtcdServer.StartAsync();

        // Eight administrators, each with its own client (its own gRPC channel) to etcd.
        var stores = Enumerable.Range(0, 8).Select(_ => new EtcdProjectionStore(etcd.Endpoint.ToString())).ToArray();
        try
        {
            Assert.Null(await stores[0].GetLatestAsync());
            var next = 0;
            await ExactlyOneProjectionWinsEachEpoch(() => stores[Interlocked.Increment(ref next) % stores.Length]);
            using var another = new EtcdProjectionStore(etcd.Endpoint.ToString(), "/another/log");
            Assert.Null(await another.GetLatestAsync());
        }
        finally
        {
            foreach (var store in stores)
            {
                store.Dispose();
            }
        }
    }

    [Fact]
    public async Task AnUnreachableEtcdIsASharedLogExceptionThatNamesEtcd()
    {
        using var store = new EtcdProjectionStore($"http://127.0.0.1:{Hyder.Testing.ReservedPorts.Take()}");
        var e = await Assert.ThrowsAsync<SharedLogException>(() => store.GetLatestAsync());
        Assert.StartsWith("etcd: Unavailable", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ProjectionRoundTripsThroughJsonAndStripesAddressesOverChains()
    {
        var projection = new Projection
        {
            Epoch = 3,
            Sequencer = "s",
            Ranges =
            [
                new LayoutRange { Start = 0, Chains = [["a", "b"], ["c", "d"]] },
                new LayoutRange { Start = 101, Chains = [["a", "b"], ["c", "d"], ["e"]] },
            ],
        };
        var copy = Projection.FromJson(projection.ToJson());
        Assert.Equal(projection.ToJson(), copy.ToJson());
        Assert.Equal(["a", "b"], copy.ChainFor(0));
        Assert.Equal(["c", "d"], copy.ChainFor(99));
        Assert.Equal(["a", "b"], copy.ChainFor(100));
        Assert.Equal(["a", "b"], copy.ChainFor(101));
        Assert.Equal(["e"], copy.ChainFor(103));
        Assert.Equal(["a", "b", "c", "d", "e"], copy.AllUnits());
        Assert.Throws<ArgumentException>(() => Projection.FromJson("""{"epoch":1,"sequencer":"s","ranges":[{"start":5,"chains":[["a"]]}]}"""));
    }
}

public sealed class EtcdReconfigurationTests
{
    [Fact]
    public async Task ReconfigurationThroughEtcdMovesClientsToTheNextEpoch()
    {
        await using var etcd = await EtcdServer.StartAsync();
        using var store = Assert.IsType<EtcdProjectionStore>(ProjectionStoreSpec.Open($"etcd:{etcd.Endpoint}"));
        var connector = new Hyder.Log.Client.InProcessConnector();
        connector.Add("s", new Hyder.Log.Sequencing.Sequencer());
        using var a = Hyder.Log.Units.LogUnit.Open(new Hyder.Log.Units.LogUnitOptions { BlockSize = 64 });
        using var b = Hyder.Log.Units.LogUnit.Open(new Hyder.Log.Units.LogUnitOptions { BlockSize = 64 });
        using var c = Hyder.Log.Units.LogUnit.Open(new Hyder.Log.Units.LogUnitOptions { BlockSize = 64 });
        connector.Add("a", a);
        connector.Add("b", b);
        connector.Add("c", c);
        var admin = new Hyder.Log.Admin.LogAdmin(store, connector);
        await admin.BootstrapAsync(new Projection { Epoch = 1, BlockSize = 64, Sequencer = "s", Ranges = [new LayoutRange { Start = 0, Chains = [["a", "b"]] }] });
        await using var log = await Hyder.Log.Client.LogClient.ConnectAsync(store, connector);
        for (var i = 0; i < 10; i++)
        {
            Assert.Equal(i, await log.AppendAsync(new byte[] { (byte)i }));
        }

        connector.Remove("b");
        await admin.ReplaceUnitAsync("b", "c");
        Assert.Equal(10, await log.AppendAsync(new byte[] { 10 }));
        Assert.Equal(2, log.Projection.Epoch);
        var buffer = new byte[64];
        for (var i = 0; i <= 10; i++)
        {
            Assert.Equal(new UnitReplyShape(LogStatus.Ok, 1), Shape(await c.ReadAsync(2, i, buffer)));
            Assert.Equal(i, buffer[0]);
        }

        Assert.Throws<ArgumentException>(() => ProjectionStoreSpec.Open("zookeeper:x"));
    }

    private readonly record struct UnitReplyShape(LogStatus Status, long Value);

    private static UnitReplyShape Shape(Hyder.Log.Units.UnitReply reply) => new(reply.Status, reply.Value);
}
