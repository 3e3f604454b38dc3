using System.Buffers.Binary;
using Hyder.Client;
using Hyder.Server.Cluster;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// Doppel's like counter end to end: many clients of two servers (gRPC, broadcast, one log) like a
/// page through the client's commutative Add; the count ends at exactly the likes that committed.
/// </summary>
public sealed class LikeCounterTests(ITestOutputHelper output)
{
    private static readonly byte[] s_page = "page:hot"u8.ToArray();

    private static byte[] Like(int client, int i) => [.. "like:"u8, (byte)client, (byte)(i >> 8), (byte)i];

    [Theory]
    [InlineData(0, 0, false)]
    [InlineData(2, 2, true)]
    public async Task ConcurrentLikesThroughTheClientEndAtTheNumberOfCommittedLikes(int premeld, int distance, bool groupMeld)
    {
        const int Clients = 8;
        const int LikesPerClient = 40;
        await using var cluster = await InProcessCluster.StartAsync(2, new ClusterSettings { PremeldThreads = premeld, Distance = distance, GroupMeld = groupMeld });
        var clients = cluster.Addresses.Select(InProcessCluster.Client).ToArray();
        long committed = 0, unknown = 0, runs = 0;
        try
        {
            // Every client likes the one hot page, half as one-shot batches, half in interactive transactions.
            await Task.WhenAll(Enumerable.Range(0, Clients).Select(c => Task.Run(async () =>
            {
                var client = clients[c % clients.Length];
                for (var i = 0; i < LikesPerClient; i++)
                {
                    try
                    {
                        if (i % 2 == 0)
                        {
                            Interlocked.Increment(ref runs);
                            await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Like(c, i), [1]), HyderOperation.Add(s_page, 1)]);
                        }
                        else
                        {
                            await client.ReadWriteAsync(async tx =>
                            {
                                Interlocked.Increment(ref runs);
                                await tx.PutAsync(Like(c, i), [1]);
                                await tx.AddAsync(s_page, 1);
                            });
                        }

                        Interlocked.Increment(ref committed);
                    }
                    catch (TransactionOutcomeUnknownException)
                    {
                        Interlocked.Increment(ref unknown);
                    }
                }
            })));

            output.WriteLine($"committed {committed}, unknown {unknown}, runs {runs}");

            // No like conflicted with another: every run committed the first time.
            Assert.Equal(committed + unknown, runs);

            // Each server has melded every like any server appended before it is read.
            var last = cluster.Servers.Max(s => s.LastMelded);
            var hashes = new List<HyderStateHash>();
            foreach (var client in clients)
            {
                var status = await client.GetStatusAsync();
                var hash = await client.GetStateHashAsync(atLeastOrdinal: last);
                hashes.Add(hash);
                var values = await client.ReadAsync([s_page]);
                var count = BinaryPrimitives.ReadInt64LittleEndian(values[0] ?? throw new InvalidOperationException("the counter is missing"));
                var likes = 0;
                await foreach (var row in client.ScanAsync("like:"u8.ToArray(), "like;"u8.ToArray()))
                {
                    likes++;
                }

                Assert.InRange(count, committed, committed + unknown);
                Assert.Equal(count, likes);
                output.WriteLine($"{status.ServerId}: count {count}, like records {likes}, state {hash.Hash:X16} at {hash.Ordinal}");
            }

            Assert.Equal(Clients * LikesPerClient, committed + unknown);
            if (hashes[0].Ordinal == hashes[1].Ordinal)
            {
                Assert.Equal(hashes[0].Hash, hashes[1].Hash);
            }
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
