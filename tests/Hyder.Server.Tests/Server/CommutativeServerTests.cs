using System.Buffers.Binary;
using Hyder.Server.Cluster;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Commutative;
using Hyder.Tree.Meld;
using Hyder.Tree.Serialization;
using Xunit;
using static Hyder.Server.Tests.Server.TestCluster;
using Operation = Hyder.Server.Engine.Operation;
using OperationKind = Hyder.Server.Engine.OperationKind;

namespace Hyder.Server.Tests.Server;

/// <summary>The five commutative operations through the transaction server's engine interface (docs/doppel.md).</summary>
public sealed class CommutativeServerTests
{
    [Fact]
    public async Task EveryCommutativeOperationCommitsInAOneShotTransactionAndLeavesItsValue()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings());
        var server = cluster.Servers[0];
        await Commit(server, Operation.Put(Key(2), OperationFold.Integer(10)));

        // One-shot batches of operations only: they write, so they take an admission slot like a put.
        for (var round = 0; round < 3; round++)
        {
            var outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [
                Operation.Add(Key(1), 5, min: 0, max: 100),
                Operation.MaxOf(Key(2), 7 + (round * 3)),
                Operation.MinOf(Key(3), -round),
                Operation.OPut(Key(4), round % 2 == 0 ? round : -round, Value($"o{round}")),
                Operation.TopKInsert(Key(5), 2, round, Value($"t{round}")),
            ]);
            Assert.Equal(TransactionStatus.Committed, outcome.Status);
            Assert.True(outcome.Ordinal > 0);
            Assert.All(outcome.Results, r => Assert.True(r.Found));
        }

        Assert.Equal(0, server.InFlight);
        var read = await server.ExecuteAsync(IsolationLevel.Serializable, [.. Enumerable.Range(1, 5).Select(i => Operation.Get(Key(i)))]);
        Assert.Equal(15, Integer(read.Results[0].Value));
        Assert.Equal(13, Integer(read.Results[1].Value));
        Assert.Equal(-2, Integer(read.Results[2].Value));
        Assert.True(OperationFold.TryOrdered(read.Results[3].Value, out var order, out var rest));
        Assert.Equal((2L, "o2"), (order, System.Text.Encoding.UTF8.GetString(rest)));
        var top = OperationFold.TryTopK(read.Results[4].Value);
        Assert.NotNull(top);
        Assert.Equal([(2L, "t2"), (1L, "t1")], top.Select(e => (e.Order, System.Text.Encoding.UTF8.GetString(e.Value))));
    }

    [Fact]
    public async Task ConcurrentOperationsOnOneKeyAllCommitOnEveryServerAndAReadOfTheKeyConflicts()
    {
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings());
        await Commit(cluster.Servers[0], Operation.Put(Key(1), OperationFold.Integer(0)));
        await cluster.QuiesceAsync();
        Operation[] kinds =
        [
            Operation.Add(Key(1), 1, min: 0),
            Operation.MaxOf(Key(2), 1),
            Operation.MinOf(Key(3), 1),
            Operation.OPut(Key(4), 1, Value("x")),
            Operation.TopKInsert(Key(5), 4, 1, Value("y")),
        ];

        // Every transaction takes its snapshot before any commits: as read-modify-writes all but one per key would abort.
        var open = new List<IInteractiveTransaction>();
        for (var i = 0; i < 20; i++)
        {
            var tx = cluster.Servers[i % 2].Begin(IsolationLevel.Serializable);
            var op = kinds[i % kinds.Length];
            tx.Execute(op with { Delta = op.Delta * (i + 1), Order = i });
            open.Add(tx);
        }

        // A transaction that reads the counter and adds to it depends on the read.
        var reader = cluster.Servers[0].Begin(IsolationLevel.Serializable);
        Assert.True(reader.Execute(Operation.Get(Key(1))).Found);
        reader.Execute(Operation.Add(Key(1), 1000));

        foreach (var tx in open)
        {
            Assert.Equal(TransactionStatus.Committed, (await tx.CommitAsync()).Status);
            await tx.DisposeAsync();
        }

        var conflicted = await reader.CommitAsync();
        Assert.Equal(TransactionStatus.Aborted, conflicted.Status);
        Assert.Equal(AbortCause.ReadWrite, conflicted.Cause);

        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        foreach (var server in cluster.Servers)
        {
            var read = await server.ExecuteAsync(IsolationLevel.Serializable, [.. Enumerable.Range(1, 5).Select(i => Operation.Get(Key(i)))]);
            Assert.Equal(1 + 6 + 11 + 16, Integer(read.Results[0].Value));
            Assert.Equal(17, Integer(read.Results[1].Value));
            Assert.Equal(3, Integer(read.Results[2].Value));
            Assert.True(OperationFold.TryOrdered(read.Results[3].Value, out var order, out _));
            Assert.Equal(18, order);
            Assert.Equal([19L, 14L, 9L, 4L], OperationFold.TryTopK(read.Results[4].Value)!.Select(e => e.Order));
        }
    }

    [Fact]
    public async Task ABoundedAddThatWouldLeaveItsBoundsAbortsWithBoundViolatedAndChangesNothing()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings());
        var server = cluster.Servers[0];
        await Commit(server, Operation.Add(Key(1), 5));
        var outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Put(Key(2), Value("side effect")), Operation.Add(Key(1), -6, min: 0)]);
        Assert.Equal(TransactionStatus.Aborted, outcome.Status);
        Assert.Equal(AbortCause.BoundViolated, outcome.Cause);
        Assert.Contains(Keys.Format(Key(1)), outcome.Detail);
        var read = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1)), Operation.Get(Key(2))]);
        Assert.Equal(5, Integer(read.Results[0].Value));
        Assert.False(read.Results[1].Found);
        Assert.Equal(TransactionStatus.Committed, (await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Key(1), -5, min: 0)])).Status);
    }

    public static TheoryData<string, string> BadRequests => new()
    {
        { "unknown", "unknown operation kind 99" },
        { "k0", "k is 0; it must be 1 to 16" },
        { "k17", "k is 17; it must be 1 to 16" },
        { "emptyBounds", "bounds [5, 1] are empty" },
        { "infeasible", "can never land in" },
        { "run", "can never all land in their bounds" },
        { "noValue", "an OPut needs a value" },
        { "bigValue", "the limit is 64" },
        { "emptyKey", "a key must not be empty" },
    };

    [Theory]
    [MemberData(nameof(BadRequests))]
    public async Task BadCommutativeOperationsAreRefusedWithTheirReasonBeforeAnythingIsAppended(string name, string reason)
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings(), o => o.Limits = new EngineLimits { MaxTopK = 16, MaxValueBytes = 64 });
        var server = cluster.Servers[0];
        await Commit(server, Operation.Put(Key(9), Value("before")));
        await cluster.QuiesceAsync();
        var tail = await cluster.Log.TailAsync();
        var appended = server.Metrics.Appended;
        Operation bad = name switch
        {
            "unknown" => new Operation((OperationKind)99, Key(1)),
            "k0" => Operation.TopKInsert(Key(1), 0, 1, Value("v")),
            "k17" => Operation.TopKInsert(Key(1), 17, 1, Value("v")),
            "emptyBounds" => Operation.Add(Key(1), 1, min: 5, max: 1),
            "infeasible" => Operation.Add(Key(1), long.MaxValue, max: long.MinValue),
            "run" => Operation.Add(Key(1), long.MaxValue),
            "noValue" => new Operation(OperationKind.OPut, Key(1), Order: 1),
            "bigValue" => Operation.OPut(Key(1), 1, new byte[65]),
            _ => Operation.MaxOf([], 1),
        };
        Operation[] batch = name == "run"
            ? [Operation.Put(Key(2), Value("x")), Operation.Add(Key(1), long.MaxValue), Operation.Get(Key(1)), Operation.Add(Key(1), long.MaxValue), bad]
            : [Operation.Put(Key(2), Value("x")), bad];

        var e = await Assert.ThrowsAsync<EngineException>(async () => await server.ExecuteAsync(IsolationLevel.Serializable, batch));
        Assert.Equal(EngineErrorCode.InvalidArgument, e.Code);
        Assert.Contains(reason, e.Message);
        Assert.StartsWith($"operation {batch.Length - 1}: ", e.Message);

        if (name != "run")
        {
            // An interactive transaction refuses the operation alone.
            await using var tx = server.Begin(IsolationLevel.Serializable);
            var refused = Assert.Throws<EngineException>(() => tx.Execute(bad));
            Assert.Contains(reason, refused.Message);
        }

        Assert.Equal(tail, await cluster.Log.TailAsync());
        Assert.Equal(appended, server.Metrics.Appended);
        var read = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1)), Operation.Get(Key(2))]);
        Assert.False(read.Results[0].Found);
        Assert.False(read.Results[1].Found);
    }

    [Fact]
    public async Task AddsOfOneKeyThatFitOnlyFromSomeStartingValuesAreNotRefused()
    {
        await using var cluster = await TestCluster.StartAsync(1, new ClusterSettings());
        var server = cluster.Servers[0];

        // From long.MinValue these two fit; from 0 (the key is absent) meld finds the overflow.
        var outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Key(1), long.MaxValue), Operation.Add(Key(1), long.MaxValue)]);
        Assert.Equal(TransactionStatus.Aborted, outcome.Status);
        Assert.Equal(AbortCause.BoundViolated, outcome.Cause);

        // A put between them starts over: each run fits alone.
        outcome = await server.ExecuteAsync(IsolationLevel.Serializable, [
            Operation.Add(Key(2), long.MaxValue), Operation.Put(Key(2), OperationFold.Integer(0)), Operation.Add(Key(2), long.MaxValue)]);
        Assert.Equal(TransactionStatus.Committed, outcome.Status);
    }

    /// <summary>
    /// A faulty peer appends intentions whose operation lists break the format (an unknown operation
    /// code, a TopKInsert K over 1024, an Add with min &gt; max): every server rejects each one the
    /// same way, and they reach the same state.
    /// </summary>
    [Fact]
    public async Task IntentionsWithMalformedOperationListsAreRejectedAlikeOnEveryServer()
    {
        await using var cluster = await TestCluster.StartAsync(2, new ClusterSettings());
        var add = new byte[1 + 8 + 1 + 8 + 8];
        add[0] = 3;
        add[9] = 3;
        BinaryPrimitives.WriteInt64LittleEndian(add.AsSpan(10), 5);
        BinaryPrimitives.WriteInt64LittleEndian(add.AsSpan(18), 1);
        byte[][] lists =
        [
            [99],
            [7, 0xD0, 0x0F, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            add,
        ];
        foreach (var list in lists)
        {
            Assert.NotNull(OperationList.Check(list));
            await AppendDoctored(cluster, Key(1), list);
        }

        Assert.Equal(TransactionStatus.Committed, (await cluster.Servers[1].ExecuteAsync(IsolationLevel.Serializable, [Operation.Add(Key(1), 1)])).Status);
        var hashes = await cluster.QuiesceAsync();
        Assert.Equal(hashes[0], hashes[1]);
        foreach (var server in cluster.Servers)
        {
            Assert.Equal(3, server.Metrics.AbortsOf(AbortCause.Rejected));
            var read = await server.ExecuteAsync(IsolationLevel.Serializable, [Operation.Get(Key(1))]);
            Assert.Equal(1, Integer(read.Results[0].Value));
        }
    }

    /// <summary>An intention of one Add on an empty database, its list replaced by <paramref name="list"/>, appended as a peer would.</summary>
    private static async Task AppendDoctored(TestCluster cluster, byte[] key, byte[] list)
    {
        var db = new Database();
        var tx = db.Begin(IsolationLevel.Serializable);
        tx.Add(key, 1);
        var intention = tx.Complete()!;
        var node = intention.Root;
        while (node is not null && !node.Key.AsSpan().SequenceEqual(key))
        {
            node = Keys.Compare(key, node.Key) < 0 ? node.Left : node.Right;
        }

        node!.Payload = list;
        var encoded = IntentionEncoder.Encode(intention, cluster.Settings.BlockSize);
        var positions = new long[encoded.Parts.Count];
        for (var i = 0; i < positions.Length; i++)
        {
            positions[i] = await cluster.Log.AppendAsync(encoded.Parts[i]);
        }

        await cluster.Log.AppendAsync(encoded.Finish(positions));
    }

    private static async Task Commit(TransactionServer server, params Operation[] operations) =>
        Assert.Equal(TransactionStatus.Committed, (await server.ExecuteAsync(IsolationLevel.Serializable, operations)).Status);

    private static long Integer(byte[]? value)
    {
        Assert.NotNull(value);
        Assert.True(OperationFold.TryInteger(value, out var n));
        return n;
    }
}
