using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Commutative;
using Hyder.Tree.Serialization;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;
using Operation = Hyder.Server.Engine.Operation;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// An append is not idempotent: a log client that retries an append across a new epoch can leave
/// two copies of one intention in the log (found by the simulation, seeds 346, 136 and 256). The first
/// copy decides the transaction, and its client learns that outcome; every server must abort the
/// second copy alike, or an increment counts twice and a transaction its client was told aborted
/// can commit.
/// </summary>
public sealed class DuplicateIntentionTests
{
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task ASecondCopyOfAnIntentionInTheLogIsAbortedOnEveryServer(bool groupMeld)
    {
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings { GroupMeld = groupMeld });
        var server = cluster.Servers[0];
        await Commit(server, Operation.Put(Key(1), OperationFold.Integer(0)), Operation.Put(Key(2), Value("a")));
        await Commit(server, Operation.Add(Key(1), 5));
        await cluster.QuiesceAsync();
        var copy = await LastIntentionBlockAsync(cluster);
        var commits = cluster.Servers.Select(s => s.Metrics.Commits).ToArray();
        var aborts = cluster.Servers.Select(s => s.Metrics.Aborts).ToArray();

        // The copy, then a transaction after it (with group meld it completes the copy's pair).
        await cluster.Log.AppendAsync(copy);
        await Commit(cluster.Servers[1], Operation.Put(Key(2), Value("b")));
        var hashes = await cluster.QuiesceAsync();
        Assert.All(hashes, h => Assert.Equal(hashes[0], h));

        for (var i = 0; i < cluster.Servers.Count; i++)
        {
            var s = cluster.Servers[i];
            var read = await s.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1))]);
            Assert.True(OperationFold.TryInteger(read.Results[0].Value, out var counter));
            Assert.Equal(5, counter);
            Assert.Equal(commits[i] + 1, s.Metrics.Commits); // the put (a read-only transaction is not melded)
            Assert.Equal(aborts[i] + 1, s.Metrics.Aborts); // the copy
        }
    }

    /// <summary>The final block of the last intention in the log.</summary>
    private static async Task<byte[]> LastIntentionBlockAsync(TestCluster cluster)
    {
        var buffer = new byte[cluster.Log.BlockSize];
        for (var p = await cluster.Log.TailAsync() - 1; p >= 0; p--)
        {
            var read = await cluster.Log.ReadAsync(p, buffer);
            var block = buffer.AsSpan(0, read.Length);
            if (Blocks.TryParse(block, out var kind, out _) && kind == BlockKind.Intention)
            {
                return block.ToArray();
            }
        }

        throw new InvalidOperationException("no intention in the log");
    }

    private static async Task Commit(TransactionServer server, params Operation[] operations) =>
        Assert.Equal(TransactionStatus.Committed, (await server.ExecuteAsync(IsolationLevel.Serializable, operations)).Status);
}
