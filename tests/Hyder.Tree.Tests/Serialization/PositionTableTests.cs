using FsCheck;
using FsCheck.Fluent;
using Hyder.Tree.Serialization;
using Xunit;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>
/// The encoders' position table: whatever positions are collected, in whatever order and however
/// often, it seals into the sorted distinct table and gives each position its index in it, through
/// growth and reuse, by comparison sort below <see cref="PositionTable.RadixFrom"/> positions and
/// by radix sort from there, over narrow and wide ranges of positions.
/// </summary>
public sealed class PositionTableTests
{
    /// <summary>
    /// Up to <paramref name="maxDistinct"/> positions, each named one to three times, spread over
    /// ranges from one position to the whole log (shared with <see cref="WriteOrderPositionsTests"/>).
    /// </summary>
    internal static Gen<long[]> Positions(int maxDistinct) =>
        from count in Gen.Choose(0, maxDistinct)
        from width in Gen.Elements(1L, 255L, 256L, 70_000L, 3_000_000L, 1L << 32, 1L << 40, NodeVersion.MaxPosition - 1)
        from offsets in Gen.ArrayOf(Gen.Choose(0, int.MaxValue), count)
        from start in Gen.Choose(1, 1000)
        from repeats in Gen.Choose(1, 3)
        select offsets.Select(o => start + (long)((ulong)o * 2654435761UL % (ulong)width)).SelectMany(p => Enumerable.Repeat(p, repeats)).ToArray();

    private static readonly Gen<long[]> Collections = Positions(700);

    [Fact]
    public void SealingGivesTheSortedDistinctPositionsAndEachOnesIndex()
    {
        // One table for every case: each starts from the last one's Clear.
        var table = new PositionTable(4);
        var property = Prop.ForAll(Arb.From(Collections), positions =>
        {
            table.Clear();
            var shuffled = positions.ToArray();
            new Random(positions.Length).Shuffle(shuffled);
            foreach (var p in shuffled)
            {
                table.Add(p);
            }

            var expected = positions.Distinct().Order().ToArray();
            var sealedTable = table.Seal().ToArray();
            return table.Count == expected.Length
                && sealedTable.SequenceEqual(expected)
                && table.Sorted.SequenceEqual(expected)
                && expected.Select((p, i) => table.IndexOf(p) == i).All(ok => ok);
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(400).WithQuietOnSuccess(true), property);
    }

    [Fact]
    public void OnlyPersistentVersionsNamePositions()
    {
        var table = new PositionTable();
        table.Add(NodeVersion.None);
        table.Add(NodeVersion.Ephemeral(3, 17));
        table.Add(NodeVersion.Persistent(42, 5));
        table.Add(NodeVersion.Persistent(42, 9));
        Assert.Equal([42L], table.Seal().ToArray());
        Assert.Equal(0, table.IndexOf(42));
    }

    [Fact]
    public void MisuseIsRefusedNotAnsweredWrongly()
    {
        var table = new PositionTable();
        table.Add(7);
        Assert.Throws<InvalidOperationException>(() => table.IndexOf(7));
        Assert.Throws<InvalidOperationException>(() => table.Sorted.Length);
        table.Seal();
        Assert.Throws<InvalidOperationException>(() => table.IndexOf(8));
        Assert.Throws<InvalidOperationException>(() => table.Add(9));
        table.Clear();
        Assert.Equal(0, table.Count);
        table.Add(9);
        Assert.Equal([9L], table.Seal().ToArray());
    }
}
