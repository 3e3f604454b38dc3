using Hyder.Log;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Serialization;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;
using Operation = Hyder.Server.Engine.Operation;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// The log is the authority; broadcast is an optimisation. A peer's block that claims a position
/// whose real content differs (another position's block, a copy of an intention under a later
/// position, or a block for a position the log fills as a hole) once made the server that took it
/// meld something its peers did not: found by the simulation with forged broadcast blocks
/// (`sim --seed 1 --faults broadcast --trust-broadcast`, a hole forgery). A server
/// now uses a peer's block only when the log holds the same bytes at that position, unless it is
/// told to trust broadcast (<see cref="ServerOptions.TrustBroadcast"/>).
/// </summary>
public sealed class ForgedBroadcastTests
{
    public enum Forgery
    {
        /// <summary>The second intention's position carries the first intention's block (the server that trusts it misses key 2).</summary>
        WrongContent,

        /// <summary>The third intention's position carries a copy of the second intention's block (the server that trusts it misses key 3).</summary>
        Misplaced,

        /// <summary>A position the log holds as a hole fill carries a copy of the third intention's block.</summary>
        Hole,
    }

    [Theory]
    [InlineData(Forgery.WrongContent)]
    [InlineData(Forgery.Misplaced)]
    [InlineData(Forgery.Hole)]
    public async Task AForgedBlockIsCheckedAgainstTheLogAndTheServerMeldsWhatTheLogHolds(Forgery forgery)
    {
        await using var cluster = await StartAsync(1, new ClusterSettings());
        var (server, forged) = await ForgeAsync(cluster, forgery, trust: false);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.Equal(cluster.Servers[0].LastMelded, server.LastMelded);
        Assert.Equal(0, forged.Left);
        Assert.Equal(1, server.Metrics.BroadcastMismatches);
        Assert.Equal(0, server.Metrics.BroadcastHits);
        await AssertHoldsAllThree(server);
    }

    /// <summary>
    /// The control: a server that trusts broadcast melds the forged block and diverges (what the
    /// rule prevents): another state, or (the hole) one ordinal more than its peer, so every later
    /// ordinal names another intention on it than on its peers.
    /// </summary>
    [Theory]
    [InlineData(Forgery.WrongContent)]
    [InlineData(Forgery.Misplaced)]
    [InlineData(Forgery.Hole)]
    public async Task AServerThatTrustsBroadcastDivergesOnAForgedBlock(Forgery forgery)
    {
        await using var cluster = await StartAsync(1, new ClusterSettings());
        var (server, forged) = await ForgeAsync(cluster, forgery, trust: true);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(0, forged.Left);
        Assert.True(hashes[0] != hashes[1] || cluster.Servers[0].LastMelded != server.LastMelded, "the trusting server did not diverge");
        Assert.Equal(0, server.Metrics.BroadcastMismatches);
    }

    [Fact]
    public async Task APeersBlockWithTheLogsBytesCountsAsABroadcastHit()
    {
        await using var cluster = await StartAsync(1, new ClusterSettings());
        var positions = await CommitThree(cluster);
        var honest = new ForgingBroadcast();
        honest.Blocks[positions[1]] = await BlockAt(cluster, positions[1]);
        var server = await TransactionServer.StartAsync(cluster.Log, Options("server-2", cluster.Settings), honest);
        cluster.Servers.Add(server);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        Assert.Equal(1, server.Metrics.BroadcastHits);
        Assert.Equal(0, server.Metrics.BroadcastMismatches);
    }

    /// <summary>Writes the log, then starts a second server whose broadcast forges one block.</summary>
    private static async Task<(TransactionServer Server, ForgingBroadcast Forged)> ForgeAsync(TestCluster cluster, Forgery forgery, bool trust)
    {
        var positions = await CommitThree(cluster);
        var forged = new ForgingBroadcast();
        switch (forgery)
        {
            case Forgery.WrongContent:
                forged.Blocks[positions[1]] = await BlockAt(cluster, positions[0]);
                break;
            case Forgery.Misplaced:
                forged.Blocks[positions[2]] = await BlockAt(cluster, positions[1]);
                break;
            default:
                // A hole at the tail (as a writer that took the token and died leaves), then a
                // fourth intention past it.
                var hole = await cluster.Log.TailAsync();
                Assert.Equal(LogEntryKind.Filled, await cluster.Log.FillAsync(hole));
                var outcome = await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(4), Value("d"))]);
                Assert.Equal(TransactionStatus.Committed, outcome.Status);
                Assert.True(await cluster.Log.TailAsync() > hole + 1);
                forged.Blocks[hole] = await BlockAt(cluster, positions[2]);
                break;
        }

        var options = Options("server-2", cluster.Settings);
        options.TrustBroadcast = trust;
        var server = await TransactionServer.StartAsync(cluster.Log, options, forged);
        cluster.Servers.Add(server);
        return (server, forged);
    }

    /// <summary>Three intentions that write "a", "b", "c" to keys 1, 2, 3; their log positions.</summary>
    private static async Task<long[]> CommitThree(TestCluster cluster)
    {
        for (var i = 1; i <= 3; i++)
        {
            var outcome = await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(i), Value(((char)('a' + i - 1)).ToString()))]);
            Assert.Equal(TransactionStatus.Committed, outcome.Status);
        }

        await cluster.QuiesceAsync();
        var found = new List<long>();
        var buffer = new byte[cluster.Log.BlockSize];
        var tail = await cluster.Log.TailAsync();
        for (long p = 0; p < tail; p++)
        {
            var read = await cluster.Log.ReadAsync(p, buffer);
            if (read.Kind == LogEntryKind.Data && Blocks.TryParse(buffer.AsSpan(0, read.Length), out var kind, out _) && kind == BlockKind.Intention)
            {
                found.Add(p);
            }
        }

        Assert.Equal(3, found.Count);
        return [.. found];
    }

    private static async Task<byte[]> BlockAt(TestCluster cluster, long position)
    {
        var buffer = new byte[cluster.Log.BlockSize];
        var read = await cluster.Log.ReadAsync(position, buffer);
        return buffer.AsSpan(0, read.Length).ToArray();
    }

    private static async Task AssertHoldsAllThree(TransactionServer server)
    {
        var read = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1)), Operation.Get(Key(2)), Operation.Get(Key(3))]);
        Assert.Equal(Value("a"), read.Results[0].Value);
        Assert.Equal(Value("b"), read.Results[1].Value);
        Assert.Equal(Value("c"), read.Results[2].Value);
    }

    /// <summary>A peer whose blocks are given per position: the test decides what it claims.</summary>
    private sealed class ForgingBroadcast : IIntentionBroadcast
    {
        public Dictionary<long, byte[]> Blocks { get; } = [];

        /// <summary>Blocks not taken yet.</summary>
        public int Left
        {
            get
            {
                lock (Blocks)
                {
                    return Blocks.Count;
                }
            }
        }

        public void Publish(long position, ReadOnlyMemory<byte> block)
        {
        }

        public bool TryTake(long position, out byte[] block)
        {
            lock (Blocks)
            {
                if (Blocks.Remove(position, out var found))
                {
                    block = found;
                    return true;
                }
            }

            block = [];
            return false;
        }

        public void DiscardBelow(long position)
        {
        }

        public void OnReceived(Action received)
        {
        }
    }
}
