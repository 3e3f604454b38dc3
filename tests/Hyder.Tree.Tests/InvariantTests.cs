using System.Diagnostics;
using System.Reflection;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;
using Xunit;

namespace Hyder.Tree.Tests;

/// <summary>
/// The Debug tier of the engine's invariants (<see cref="Invariant"/>): every check is compiled
/// out of Release, and in Debug the checks catch a deliberately broken hand-off. The tests run in
/// both configurations and assert what each must do: CI runs this project in Release and in Debug
/// (tools/test.sh).
/// </summary>
public sealed class InvariantTests
{
    [Fact]
    public void EveryDebugCheckOfTheEngineIsCompiledOutOfRelease()
    {
        var checks = typeof(Database).Assembly.GetTypes()
            .SelectMany(t => t.GetMethods(BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static | BindingFlags.Instance | BindingFlags.DeclaredOnly))
            .Where(m => m.Name.StartsWith("Assert", StringComparison.Ordinal))
            .ToList();
        Assert.Contains(checks, m => m.DeclaringType == typeof(MeldOperator) && m.Name == "AssertOutput");
        Assert.Contains(checks, m => m.DeclaringType == typeof(NodeExchange) && m.Name == "AssertFull");
        Assert.Contains(checks, m => m.DeclaringType == typeof(Invariant) && m.Name == "Assert");
        var kept = checks.Where(m => m.GetCustomAttributes<ConditionalAttribute>().All(c => c.ConditionString != "DEBUG"));
        Assert.Empty(kept.Select(m => $"{m.DeclaringType}.{m.Name}"));
    }

    [Fact]
    public void AnExchangeCatchesABatchWithANodeStillInUseInDebugOnly()
    {
        var exchange = new NodeExchange();
        var pool = new NodePool(NodeExchange.Reserve + NodeExchange.BatchSize, exchange);
        var batch = exchange.EmptyBatch();
        for (var i = 0; i < batch.Length; i++)
        {
            var n = new Node();
            pool.Return(n);
            batch[i] = pool.Rent();
        }

        // Every node was rented back out: none is free, so handing the batch off gives two owners.
#if DEBUG
        var e = Assert.Throws<InvariantViolationException>(() => exchange.Offer(batch));
        Assert.Contains("not free", e.Message, StringComparison.Ordinal);
#else
        Assert.True(exchange.Offer(batch));
#endif
    }

    [Fact]
    public void APoolCatchesANodeChangedWhileFreeInDebugOnly()
    {
        var pool = new NodePool(16);
        var node = new Node { Key = [1] };
        pool.Return(node);

        // A writer that kept the node after handing it back.
        node.Flags = NodeFlags.Altered;
#if DEBUG
        Assert.Throws<InvariantViolationException>(() => pool.Rent());
#else
        Assert.Same(node, pool.Rent());
#endif
    }

    [Fact]
    public void MeldsOutputCheckCatchesKeysOutOfOrderAndUnbalancedNodesInDebugOnly()
    {
        var op = new MeldOperator(0, new NodePool(16), firstSequence: 10);
        var check = typeof(MeldOperator).GetMethod("AssertOutput", BindingFlags.NonPublic | BindingFlags.Instance)!;
        Node Fresh(byte key, long sequence, Node? left = null, Node? right = null)
        {
            var n = new Node { Key = [key], Left = left, Right = right, Vn = NodeVersion.Ephemeral(0, sequence) };
            n.FixHeight();
            return n;
        }

        var ordered = Fresh(2, 3, Fresh(1, 1), Fresh(3, 2));
        check.Invoke(op, [ordered, true]);

        var outOfOrder = Fresh(2, 3, Fresh(3, 1), null);
        var unbalanced = Fresh(5, 5, Fresh(3, 4, Fresh(2, 3, Fresh(1, 2)), null), null);
        foreach (var root in new[] { outOfOrder, unbalanced })
        {
#if DEBUG
            var e = Assert.Throws<TargetInvocationException>(() => check.Invoke(op, [root, true]));
            Assert.IsType<InvariantViolationException>(e.InnerException);
#else
            check.Invoke(op, [root, true]);
#endif
        }
    }
}
