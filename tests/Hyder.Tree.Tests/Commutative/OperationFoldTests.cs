using System.Text;
using Hyder.Tree.Commutative;
using Xunit;

namespace Hyder.Tree.Tests.Commutative;

/// <summary>What each commutative operation does to a value (docs/doppel.md, "Values"), and the list encoding.</summary>
public sealed class OperationFoldTests
{
    private static byte[] Int(long v) => OperationFold.Integer(v);

    private static (FoldError Error, byte[]? Value) Fold(byte[]? current, params Operation[] ops)
    {
        var error = OperationFold.Apply(OperationList.Encode(ops), current, out var value);
        return (error, value);
    }

    private static long AsInt(byte[]? value)
    {
        Assert.NotNull(value);
        Assert.True(OperationFold.TryInteger(value, out var n));
        return n;
    }

    [Fact]
    public void AddOnAMissingKeyStartsFromZero() => Assert.Equal(5, AsInt(Fold(null, Operation.Add(5)).Value));

    [Fact]
    public void AddsSumInOrder() => Assert.Equal(7, AsInt(Fold(Int(10), Operation.Add(-5), Operation.Add(2)).Value));

    [Fact]
    public void ABoundedAddMayReachItsBoundButNotCrossIt()
    {
        Assert.Equal(0, AsInt(Fold(Int(10), Operation.Add(-10, min: 0)).Value));
        Assert.Equal(FoldError.BoundViolated, Fold(Int(10), Operation.Add(-11, min: 0)).Error);
        Assert.Equal(100, AsInt(Fold(Int(90), Operation.Add(10, max: 100)).Value));
        Assert.Equal(FoldError.BoundViolated, Fold(Int(90), Operation.Add(11, max: 100)).Error);
    }

    [Fact]
    public void ABoundIsCheckedAtItsPlaceInTheList()
    {
        // 10 - 8 = 2 (fine), then -5 crosses 0; the same operations in the other order pass.
        Assert.Equal(FoldError.BoundViolated, Fold(Int(10), Operation.Add(-8), Operation.Add(-5, min: 0)).Error);
        Assert.Equal(FoldError.None, Fold(Int(10), Operation.Add(-5, min: 0), Operation.Add(-8)).Error);
    }

    [Fact]
    public void TheResultMustLieInTheBoundsEvenWhenTheValueAlreadyLiesOutside() =>
        Assert.Equal(FoldError.BoundViolated, Fold(Int(-5), Operation.Add(3, min: 0)).Error);

    [Fact]
    public void AnAddThatLeavesTheSixtyFourBitRangeIsABoundViolation()
    {
        Assert.Equal(FoldError.BoundViolated, Fold(Int(long.MaxValue), Operation.Add(1)).Error);
        Assert.Equal(FoldError.BoundViolated, Fold(Int(long.MinValue), Operation.Add(-1)).Error);
        Assert.Equal(long.MaxValue, AsInt(Fold(Int(long.MaxValue - 1), Operation.Add(1)).Value));
    }

    [Fact]
    public void MaxAndMinOnAMissingKeyTakeTheOperand()
    {
        Assert.Equal(-3, AsInt(Fold(null, Operation.MaxOf(-3)).Value));
        Assert.Equal(9, AsInt(Fold(null, Operation.MinOf(9)).Value));
    }

    [Fact]
    public void MaxKeepsTheLargerAndMinTheSmaller()
    {
        Assert.Equal(7, AsInt(Fold(Int(7), Operation.MaxOf(3)).Value));
        Assert.Equal(8, AsInt(Fold(Int(7), Operation.MaxOf(8)).Value));
        Assert.Equal(3, AsInt(Fold(Int(7), Operation.MinOf(3)).Value));
        Assert.Equal(7, AsInt(Fold(Int(7), Operation.MinOf(8)).Value));
    }

    [Fact]
    public void OPutKeepsTheHighestOrderAndOnATieTheLargerValue()
    {
        var (_, v) = Fold(null, Operation.OPut(5, "b"u8.ToArray()), Operation.OPut(3, "z"u8.ToArray()), Operation.OPut(5, "a"u8.ToArray()));
        Assert.True(OperationFold.TryOrdered(v, out var order, out var rest));
        Assert.Equal(5, order);
        Assert.Equal("b", Encoding.ASCII.GetString(rest));
    }

    [Fact]
    public void TopKKeepsTheKHighestOrdersOneEntryPerOrder()
    {
        var (_, v) = Fold(
            null,
            Operation.TopKInsert(3, 1, "a"u8.ToArray()),
            Operation.TopKInsert(3, 9, "b"u8.ToArray()),
            Operation.TopKInsert(3, 4, "c"u8.ToArray()),
            Operation.TopKInsert(3, 9, "a"u8.ToArray()),
            Operation.TopKInsert(3, 6, "d"u8.ToArray()));
        var entries = OperationFold.TryTopK(v);
        Assert.NotNull(entries);
        Assert.Equal([(9L, "b"), (6L, "d"), (4L, "c")], entries.Select(e => (e.Order, Encoding.ASCII.GetString(e.Value))));
    }

    [Fact]
    public void OPutAndTopKDoNotDependOnTheOrderTheyAreAppliedIn()
    {
        var random = new Random(3);
        for (var t = 0; t < 200; t++)
        {
            var ops = Enumerable.Range(0, 6).Select(_ => random.Next(2) == 0
                ? Operation.OPut(random.Next(4), [(byte)random.Next(3)])
                : Operation.TopKInsert(3, random.Next(5), [(byte)random.Next(3)])).ToArray();
            var opput = ops.Where(o => o.Kind == ChangeKind.OPut).ToArray();
            var topk = ops.Where(o => o.Kind == ChangeKind.TopKInsert).ToArray();
            foreach (var group in new[] { opput, topk }.Where(g => g.Length > 0))
            {
                var expected = Fold(null, group).Value;
                var shuffled = group.OrderBy(_ => random.Next()).ToArray();
                Assert.Equal(expected, Fold(null, shuffled).Value);
            }
        }
    }

    [Fact]
    public void AnOperationOnAValueOfAnotherTypeIsATypeMismatch()
    {
        Assert.Equal(FoldError.TypeMismatch, Fold("abc"u8.ToArray(), Operation.Add(1)).Error);
        Assert.Equal(FoldError.TypeMismatch, Fold("abc"u8.ToArray(), Operation.MaxOf(1)).Error);
        Assert.Equal(FoldError.TypeMismatch, Fold("1234567"u8.ToArray(), Operation.OPut(1, [1])).Error);
        Assert.Equal(FoldError.TypeMismatch, Fold("abc"u8.ToArray(), Operation.TopKInsert(2, 1, [1])).Error);
    }

    [Fact]
    public void PutAndClearAreWritesInTheList()
    {
        Assert.Equal(4, AsInt(Fold(Int(100), Operation.Put(Int(3)), Operation.Add(1)).Value));
        Assert.Null(Fold(Int(100), Operation.Add(1), Operation.Clear()).Value);
        Assert.Equal(2, AsInt(Fold(Int(100), Operation.Clear(), Operation.Add(2)).Value));

        // The bound before a write is still checked where it stands.
        Assert.Equal(FoldError.BoundViolated, Fold(Int(1), Operation.Add(-2, min: 0), Operation.Put(Int(50))).Error);
    }

    [Fact]
    public void AListAppliedWholeEqualsItsPartsAppliedOneAfterTheOther()
    {
        // Group meld concatenates two intentions' lists: that must mean the same as applying them in turn.
        var random = new Random(11);
        for (var t = 0; t < 500; t++)
        {
            var ops = Enumerable.Range(0, random.Next(2, 8)).Select(_ => RandomOperation(random)).ToArray();
            byte[]? start = random.Next(4) switch
            {
                0 => null,
                1 => Int(random.Next(-20, 20)),
                2 => OperationFold.Ordered(random.Next(3), [1]),
                _ => "xy"u8.ToArray(),
            };
            var cut = random.Next(1, ops.Length);
            var whole = Fold(start, ops);
            var first = Fold(start, ops[..cut]);
            var second = first.Error == FoldError.None ? Fold(first.Value, ops[cut..]) : first;
            Assert.Equal(whole.Error, second.Error);
            Assert.Equal(whole.Value, second.Value);
        }
    }

    [Fact]
    public void TheLenientFoldSkipsAnOperationThatFails()
    {
        var list = OperationList.Encode(Operation.Add(1), Operation.Add(-10, min: 0), Operation.Add(2));
        Assert.Equal(FoldError.None, OperationFold.Apply(list, Int(3), out var view, lenient: true));
        Assert.Equal(6, AsInt(view));
    }

    [Fact]
    public void ListsRoundTripAndAppend()
    {
        Operation[] ops =
        [
            Operation.Put([1, 2]), Operation.Clear(), Operation.Add(-7), Operation.Add(3, 0, null), Operation.Add(3, null, 9),
            Operation.Add(3, -1, 1), Operation.MaxOf(long.MinValue), Operation.MinOf(long.MaxValue), Operation.OPut(-2, []),
            Operation.TopKInsert(1024, 8, new byte[300]),
        ];
        var list = OperationList.Encode(ops);
        Assert.Null(OperationList.Check(list));
        Assert.Equal(ops.Select(o => o.ToString()), OperationList.Decode(list).Select(o => o.ToString()));
        var appended = OperationList.Append(list, Operation.MaxOf(4));
        Assert.Equal(ops.Length + 1, OperationList.Count(appended));
        Assert.Equal(appended, OperationList.Concat(list, OperationList.Encode(Operation.MaxOf(4))));
        Assert.True(OperationList.HasWrite(list));
        Assert.False(OperationList.HasWrite(OperationList.Encode(Operation.Add(1), Operation.OPut(1, [1]))));
    }

    [Fact]
    public void MalformedListsAreNamed()
    {
        Assert.NotNull(OperationList.Check([]));
        Assert.NotNull(OperationList.Check([99]));
        Assert.NotNull(OperationList.Check([(byte)ChangeKind.Add, 1, 2, 3]));
        var bounded = OperationList.Encode(Operation.Add(1, 0, 5));
        Assert.NotNull(OperationList.Check(bounded.AsSpan(0, bounded.Length - 1)));
        bounded[9] |= 4;
        Assert.NotNull(OperationList.Check(bounded));

        // A bound equal to the 64-bit end is written as no bound: one encoding per operation.
        var explicitMin = OperationList.Encode(Operation.Add(1));
        explicitMin[9] = 1;
        Assert.NotNull(OperationList.Check([.. explicitMin, .. new byte[8] { 0, 0, 0, 0, 0, 0, 0, 0x80 }]));

        var topk = OperationList.Encode(Operation.TopKInsert(3, 1, [1]));
        topk[1] = 0;
        Assert.NotNull(OperationList.Check(topk));
        Assert.Throws<ArgumentOutOfRangeException>(() => Operation.TopKInsert(0, 1, [1]));
        Assert.Throws<ArgumentException>(() => Operation.Add(1, 5, 4));
    }

    private static Operation RandomOperation(Random random) => random.Next(9) switch
    {
        0 => Operation.Add(random.Next(-5, 6)),
        1 => Operation.Add(random.Next(-5, 6), min: random.Next(-10, 0)),
        2 => Operation.Add(random.Next(-5, 6), max: random.Next(0, 10)),
        3 => Operation.MaxOf(random.Next(-5, 6)),
        4 => Operation.MinOf(random.Next(-5, 6)),
        5 => Operation.OPut(random.Next(3), [(byte)random.Next(3)]),
        6 => Operation.TopKInsert(random.Next(1, 4), random.Next(4), [(byte)random.Next(3)]),
        7 => Operation.Put(Int(random.Next(-5, 6))),
        _ => Operation.Clear(),
    };
}
