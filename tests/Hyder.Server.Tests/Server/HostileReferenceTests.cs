using Hyder.Testing;
using System.Buffers.Binary;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Server.Follower;
using Hyder.Tree;
using Hyder.Tree.Serialization;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;
using Operation = Hyder.Server.Engine.Operation;

namespace Hyder.Server.Tests.Server;

/// <summary>
/// Intentions from a faulty or compromised peer whose final block names an ordinal or log position
/// that is not before it (<see cref="IntentionReferences"/>): every server rejects them alike, in
/// the threaded and the cooperative mode, keeps equal state hashes and goes on serving. Each test
/// is bounded: a stalled server fails it instead of blocking the run.
/// </summary>
public sealed class HostileReferenceTests
{
    private static readonly TimeSpan s_bound = TimeSpan.FromSeconds(30);

    /// <summary>
    /// With group meld the state of a pair's first ordinal v − 1 is published only with the pair, so
    /// an intention v naming it made a threaded deserializer wait for a state that waited for v.
    /// </summary>
    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AnIntentionNamingTheFirstOfItsOwnPairAsItsSnapshotIsRejectedOnEveryServer(bool cooperative)
    {
        await using var cluster = await StartAsync(groupMeld: true, cooperative);
        var template = await TemplateAsync(cluster);
        var first = await OpenPairAsync(cluster);
        var before = Counts(cluster);

        await cluster.Log.AppendAsync(Forge(template, snapshot: first)); // ordinal first + 1
        await AssertRejectedAlikeAsync(cluster, before);
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task AnIntentionNamingItselfOrALaterOrdinalAsItsSnapshotIsRejectedOnEveryServer(bool groupMeld)
    {
        await using var cluster = await StartAsync(groupMeld, cooperative: false);
        var template = await TemplateAsync(cluster);
        var v = cluster.Servers[0].LastRead + 1;
        var before = Counts(cluster);

        await cluster.Log.AppendAsync(Forge(template, snapshot: v));
        await cluster.Log.AppendAsync(Forge(template, snapshot: v + 5));
        await AssertRejectedAlikeAsync(cluster, before, rejected: 2);
    }

    [Theory]
    [InlineData(0)] // the final block's own position
    [InlineData(1)] // the next position, which a block appended later fills
    public async Task AnIntentionNamingAPartAtOrAfterItsOwnPositionIsRejectedOnEveryServer(long ahead)
    {
        await using var cluster = await StartAsync(groupMeld: false, cooperative: false);
        var template = await TemplateAsync(cluster);
        var position = await cluster.Log.TailAsync();
        var before = Counts(cluster);

        var forged = Forge(template, parts: [position + ahead]);
        Assert.Equal(position, await cluster.Log.AppendAsync(forged));
        await cluster.Log.AppendAsync(new byte[] { 1, 2, 3 }); // fills @position + 1: not a block, skipped
        await AssertRejectedAlikeAsync(cluster, before);
    }

    /// <summary>
    /// The position table names the log positions of the nodes every persistent version (a child,
    /// an SCV, an SSV, a delete entry) refers to. Pointed at the intention's own position, a later
    /// one, or the first of its own group-meld pair, they name no node of S(s), which holds only
    /// earlier intentions' nodes: an outside child does not resolve (the decoder rejects it), and a
    /// copied node's SCV matches no node meld compares it with (a conflict). Either way every
    /// server aborts it alike.
    /// </summary>
    [Theory]
    [InlineData("itself")]
    [InlineData("later")]
    [InlineData("its pair's first")]
    public async Task AnIntentionWhoseNodesNameItsOwnALaterOrItsPairsPositionIsRejectedOnEveryServer(string target)
    {
        await using var cluster = await StartAsync(groupMeld: true, cooperative: false);
        var older = await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(2), Value("b"))]).AsTask().WaitAsync(s_bound);
        Assert.Equal(TransactionStatus.Committed, older.Status);
        var template = await TemplateAsync(cluster); // reads key 2: its table names the older intention's position
        await OpenPairAsync(cluster);
        var pairFirst = await cluster.Log.TailAsync() - 1;
        var position = pairFirst + 1;
        var before = Counts(cluster);

        var table = target switch { "itself" => position, "later" => position + 3, _ => pairFirst };
        Assert.Equal(position, await cluster.Log.AppendAsync(Forge(template, table: table)));
        await AssertRejectedAlikeAsync(cluster, before);
    }

    [Fact]
    public void TheRuleNamesEveryMisplacedReferenceAndAcceptsAnHonestHeader()
    {
        IntentionHeader Header(long snapshot, params long[] parts) => new(1, parts, snapshot, IsolationLevel.Serializable, 1);

        Assert.Null(IntentionReferences.Check(Header(8, 40, 41), ordinal: 10, position: 42, groupMeld: true));
        Assert.Null(IntentionReferences.Check(Header(8), ordinal: 9, position: 42, groupMeld: true)); // the end of the previous pair
        Assert.Null(IntentionReferences.Check(Header(9), ordinal: 10, position: 42, groupMeld: false)); // no pairs without group meld
        Assert.Contains("own group-meld pair", IntentionReferences.Check(Header(9), ordinal: 10, position: 42, groupMeld: true));
        Assert.Contains("not before it", IntentionReferences.Check(Header(10), ordinal: 10, position: 42, groupMeld: false));
        Assert.Contains("not before it", IntentionReferences.Check(Header(11), ordinal: 10, position: 42, groupMeld: true));
        Assert.Equal("intention #10 @42 names part @42, which is not before it", IntentionReferences.Check(Header(5, 40, 42), ordinal: 10, position: 42, groupMeld: false));
        Assert.Equal("intention #10 @42 names part @43, which is not before it", IntentionReferences.Check(Header(5, 43), ordinal: 10, position: 42, groupMeld: false));
    }

    private static Task<TestCluster> StartAsync(bool groupMeld, bool cooperative) =>
        TestCluster.StartAsync(2, new ClusterSettings { GroupMeld = groupMeld }, o => o.Cooperative = cooperative);

    /// <summary>A committed transaction's final block, to forge from; the cluster is quiet afterwards.</summary>
    private static async Task<byte[]> TemplateAsync(TestCluster cluster)
    {
        var outcome = await cluster.Servers[0].ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(2)), Operation.Put(Key(1), Value("a"))]).AsTask().WaitAsync(s_bound);
        Assert.Equal(TransactionStatus.Committed, outcome.Status);
        await cluster.QuiesceAsync(s_bound);
        var buffer = new byte[cluster.Log.BlockSize];
        for (var p = await cluster.Log.TailAsync() - 1; p >= 0; p--)
        {
            var read = await cluster.Log.ReadAsync(p, buffer);
            if (Blocks.TryParse(buffer.AsSpan(0, read.Length), out var kind, out _) && kind == BlockKind.Intention)
            {
                return buffer[..read.Length];
            }
        }

        throw new InvalidOperationException("no intention in the log");
    }

    /// <summary>Appends fillers until the last ordinal read is odd: the first of a pair whose partner is the next block.</summary>
    private static async Task<long> OpenPairAsync(TestCluster cluster)
    {
        while (true)
        {
            await ReadAllAsync(cluster);
            var last = cluster.Servers[0].LastRead;
            Assert.All(cluster.Servers, s => Assert.Equal(last, s.LastRead));
            if (last % 2 == 1)
            {
                return last;
            }

            await cluster.Log.AppendAsync(Blocks.Control(ControlKind.Filler, []));
        }
    }

    /// <summary>Waits (bounded) until every server has read every block in the log; with group meld, closes an open pair with a filler.</summary>
    private static async Task ReadAllAsync(TestCluster cluster, bool closePair = false)
    {
        using var bound = new CancellationTokenSource(s_bound);
        while (true)
        {
            var tail = await cluster.Log.TailAsync(bound.Token);
            while (cluster.Servers.Any(s => s.ReadPosition < tail))
            {
                await Task.Delay(5, bound.Token);
            }

            if (!closePair || !cluster.Settings.GroupMeld || cluster.Servers[0].LastRead % 2 == 0)
            {
                return;
            }

            await cluster.Log.AppendAsync(Blocks.Control(ControlKind.Filler, []), bound.Token);
        }
    }

    private static (long Commits, long Aborts)[] Counts(TestCluster cluster) => [.. cluster.Servers.Select(s => (s.Metrics.Commits, s.Metrics.Aborts))];

    /// <summary>
    /// Every server melds past the forged intentions (a stall fails the bound), aborts each of
    /// them, agrees on the state hash, and still commits a transaction.
    /// </summary>
    private static async Task AssertRejectedAlikeAsync(TestCluster cluster, (long Commits, long Aborts)[] before, int rejected = 1)
    {
        await ReadAllAsync(cluster, closePair: true);
        var hashes = await cluster.QuiesceAsync(s_bound);
        Assert.All(hashes, h => Assert.Equal(hashes[0], h));
        for (var i = 0; i < cluster.Servers.Count; i++)
        {
            Assert.Equal(before[i].Commits, cluster.Servers[i].Metrics.Commits);
            Assert.Equal(before[i].Aborts + rejected, cluster.Servers[i].Metrics.Aborts);
        }

        for (var i = 0; i < cluster.Servers.Count; i++)
        {
            var after = await cluster.Servers[i].ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(3 + i), Value($"server {i}"))]).AsTask().WaitAsync(s_bound);
            Assert.Equal(TransactionStatus.Committed, after.Status);
        }

        hashes = await cluster.QuiesceAsync(s_bound);
        Assert.All(hashes, h => Assert.Equal(hashes[0], h));
    }

    /// <summary>
    /// <paramref name="final"/> (an intention's final block) with a fresh nonce, so no server takes
    /// it for a copy of the original, and with its snapshot sequence and part positions replaced
    /// where given; resealed, so only the server's rules can refuse it.
    /// </summary>
    internal static byte[] Forge(byte[] final, long? snapshot = null, long[]? parts = null, long? table = null)
    {
        var body = final.AsSpan(BlockFormat.HeaderSize);
        var at = 8;
        var count = (int)Varints.Read(body, ref at);
        var oldParts = new long[count];
        for (var i = 0; i < count; i++)
        {
            oldParts[i] = (long)Varints.Read(body, ref at);
        }

        var oldSnapshot = (long)Varints.Read(body, ref at);
        var rest = body[at..].ToArray();
        if (table is { } first)
        {
            // A single-block intention: its stream, after the isolation byte and the node count,
            // opens with the position table (a count, then the first position).
            Assert.Equal(0, count);
            var r = 1;
            Varints.Read(rest, ref r);
            Assert.True(Varints.Read(rest, ref r) > 0, "the template names no older position");
            var tableAt = r;
            Varints.Read(rest, ref r);
            var rewritten = new List<byte>(rest[..tableAt]);
            Varints.Write(rewritten, (ulong)first);
            rewritten.AddRange(rest[r..]);
            rest = [.. rewritten];
        }

        var writer = new List<byte>(final.Length + 64);
        writer.AddRange(new byte[BlockFormat.HeaderSize]);
        var nonce = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(nonce, Random.Shared.NextInt64());
        writer.AddRange(nonce);
        parts ??= oldParts;
        Varints.Write(writer, (ulong)parts.Length);
        foreach (var p in parts)
        {
            Varints.Write(writer, (ulong)p);
        }

        Varints.Write(writer, (ulong)(snapshot ?? oldSnapshot));
        writer.AddRange(rest);
        var block = writer.ToArray();
        BlockFormat.Seal(block, BlockKind.Intention);
        return block;
    }
}
