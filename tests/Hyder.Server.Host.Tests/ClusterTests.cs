using System.Buffers.Binary;
using Hyder.Client;
using Hyder.Server.Cluster;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>Three servers on one log, each behind gRPC, with broadcast: a conflicting transfer workload through the client's retry helper.</summary>
public sealed class ClusterTests(ITestOutputHelper output)
{
    private const int Accounts = 8;
    private const long Opening = 1000;

    private static byte[] Account(int i) => [(byte)'a', (byte)'c', (byte)'c', (byte)i];

    private static byte[] Amount(long v)
    {
        var b = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(b, v);
        return b;
    }

    private static long Amount(byte[]? b) => BinaryPrimitives.ReadInt64LittleEndian(b ?? throw new InvalidOperationException("an account vanished"));

    [Theory]
    [InlineData(0, 0, false)]
    [InlineData(2, 2, true)]
    public async Task ConflictingTransfersAllCommitPreserveTheTotalAndLeaveEveryServerInTheSameState(int premeld, int distance, bool groupMeld)
    {
        var settings = new ClusterSettings { PremeldThreads = premeld, Distance = distance, GroupMeld = groupMeld };
        await using var cluster = await InProcessCluster.StartAsync(3, settings);
        var clients = cluster.Addresses.SelectMany(a => new[] { InProcessCluster.Client(a), InProcessCluster.Client(a) }).ToArray();
        try
        {
            var opened = await clients[0].ExecuteAsync(IsolationLevel.Serializable, Enumerable.Range(0, Accounts).Select(i => HyderOperation.Put(Account(i), Amount(Opening))));

            // A server's snapshot may lag the log: every server melds the opening before transfers begin.
            foreach (var client in clients)
            {
                await client.GetStateHashAsync(opened.Ordinal);
            }

            const int transfersPerClient = 40;
            var attempts = 0;
            var workers = clients.Select((client, c) => Task.Run(async () =>
            {
                var random = new Random(c);
                for (var t = 0; t < transfersPerClient; t++)
                {
                    var from = random.Next(Accounts);
                    var to = (from + 1 + random.Next(Accounts - 1)) % Accounts;
                    var amount = random.Next(1, 50);
                    await client.ReadWriteAsync(async tx =>
                    {
                        Interlocked.Increment(ref attempts);
                        var a = Amount(await tx.GetAsync(Account(from)));
                        var b = Amount(await tx.GetAsync(Account(to)));
                        await tx.PutAsync(Account(from), Amount(a - amount));
                        await tx.PutAsync(Account(to), Amount(b + amount));
                    });
                }
            })).ToArray();
            await Task.WhenAll(workers).WaitAsync(TimeSpan.FromSeconds(60));
            var transfers = clients.Length * transfersPerClient;
            output.WriteLine($"{transfers} transfers committed after {attempts} attempts ({attempts - transfers} aborted runs retried)");

            // Every server melds to the same ordinal; then the same ordinal means the same state.
            var target = cluster.Servers.Max(s => s.LastMelded);
            var hashes = new HyderStateHash[cluster.Addresses.Count];
            for (var i = 0; i < hashes.Length; i++)
            {
                await using var client = InProcessCluster.Client(cluster.Addresses[i]);
                hashes[i] = await client.GetStateHashAsync(target);
                var rows = new List<KeyValuePair<byte[], byte[]>>();
                await foreach (var row in client.ScanAsync(Account(0), null))
                {
                    rows.Add(row);
                }

                Assert.Equal(Accounts, rows.Count);
                Assert.Equal(Accounts * Opening, rows.Sum(r => Amount(r.Value)));
            }

            output.WriteLine(string.Join("\n", hashes.Select((h, i) => $"server-{i + 1}: {h}, broadcast hits {cluster.Servers[i].Metrics.BroadcastHits}, log reads {cluster.Servers[i].Metrics.LogReads}")));
            Assert.All(hashes, h => Assert.Equal(hashes[0].Sequence, h.Sequence));
            Assert.All(hashes, h => Assert.Equal(hashes[0].Hash, h.Hash));
            // Group meld's fillers take ordinals but are not intentions: the commits are the transfers and the opening.
            var fillers = cluster.Servers.Sum(s => s.Metrics.Fillers);
            output.WriteLine($"commits {cluster.Servers[0].Metrics.Commits}, fillers {fillers}");
            Assert.Equal(transfers + 1, cluster.Servers[0].Metrics.Commits);
            Assert.All(cluster.Servers, s => Assert.True(s.Metrics.BroadcastHits > 0, $"{s.Options.ServerId} took no block from a broadcast"));
        }
        finally
        {
            foreach (var client in clients)
            {
                await client.DisposeAsync();
            }
        }
    }
}
