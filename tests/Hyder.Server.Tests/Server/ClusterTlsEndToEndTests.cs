using System.Net;
using System.Security.Cryptography.X509Certificates;
using Hyder.Log.Admin;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Hyder.Server.Broadcast;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Testing;
using Hyder.Tree;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// Every cluster link over mutual TLS at once: two transaction servers, each with its own member
/// certificate, on a log served over TCP (unit, sequencer and projection store) and broadcasting
/// to each other; both commit, each sees the other's writes, and both reach the same state.
/// </summary>
public sealed class ClusterTlsEndToEndTests
{
    [Fact]
    public async Task TwoServersOnATlsLogWithTlsBroadcastCommitAndReachTheSameState()
    {
        using var ca = TestCertificates.CreateCa("hyder-test-cluster-ca");
        X509Certificate2Collection trust = [ca];
        TransportSecurity Member(string name) => TransportSecurity.MutualTls(TestCertificates.Issue(ca, name, server: true, client: true), trust);

        using var unit = LogUnit.Open(new LogUnitOptions());
        await using var logServer = new LogServer(
            new IPEndPoint(IPAddress.Loopback, 0), unit, new Sequencer(), new MemoryProjectionStore(), security: Member("log-host"));
        logServer.Start();
        var endpoint = logServer.LocalEndPoint.ToString();
        var adminSecurity = Member("admin");
        await using (var adminStore = new RemoteProjectionStore(endpoint, adminSecurity))
        await using (var adminConnector = new TcpConnector(security: adminSecurity))
        {
            await new LogAdmin(adminStore, adminConnector).BootstrapAsync(new Projection
            {
                Epoch = 1,
                BlockSize = LogUnitOptions.DefaultBlockSize,
                Sequencer = endpoint,
                Ranges = [new LayoutRange { Start = 0, Chains = [[endpoint]] }],
            });
        }

        var nodes = new List<(RemoteProjectionStore Store, TcpConnector Connector, LogClient Log, BroadcastHub Hub, TransactionServer Server)>();
        try
        {
            var hubs = new List<BroadcastHub>();
            foreach (var id in new[] { "server-1", "server-2" })
            {
                var security = Member(id);
                var hub = new BroadcastHub(new BroadcastOptions { ClusterId = "tls-test", ServerId = id, Security = security });
                await hub.StartAsync();
                hubs.Add(hub);
                var store = new RemoteProjectionStore(endpoint, security);
                var connector = new TcpConnector(security: security);
                var log = await LogClient.ConnectAsync(store, connector);
                nodes.Add((store, connector, log, hub, null!));
            }

            hubs[0].AddPeer(hubs[1].LocalEndPoint);
            hubs[1].AddPeer(hubs[0].LocalEndPoint);
            await Cluster.WaitUntil(() => hubs.All(h => h.ConnectedPeers == 1), "broadcast connected over TLS");
            for (var i = 0; i < nodes.Count; i++)
            {
                var options = Options($"server-{i + 1}", new ClusterSettings());
                nodes[i] = nodes[i] with { Server = await TransactionServer.StartAsync(nodes[i].Log, options, new BroadcastHubAdapter(nodes[i].Hub)) };
            }

            long last = 0;
            for (var k = 0; k < 20; k++)
            {
                var outcome = await nodes[k % 2].Server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(k), BitConverter.GetBytes(k * 3L))]);
                Assert.Equal(TransactionStatus.Committed, outcome.Status);
                last = Math.Max(last, outcome.Ordinal);
            }

            var hashes = new List<StateHash>();
            foreach (var node in nodes)
            {
                hashes.Add(await node.Server.GetStateHashAsync(last));
                var read = await node.Server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(7))]);
                Assert.Equal(21L, BitConverter.ToInt64(read.Results[0].Value));
            }

            Assert.Equal(hashes[0], hashes[1]);
            Assert.All(hubs, h => Assert.True(h.Counters.Received > 0, $"broadcast carried nothing: {h.Counters}"));
            Assert.All(hubs, h => Assert.Equal(0, h.Counters.Refused));
            Assert.Equal(0, logServer.RefusedConnections);
        }
        finally
        {
            foreach (var node in nodes)
            {
                if (node.Server is not null)
                {
                    await node.Server.DisposeAsync();
                }

                await node.Hub.DisposeAsync();
                await node.Log.DisposeAsync();
                await node.Connector.DisposeAsync();
                await node.Store.DisposeAsync();
            }
        }
    }
}
