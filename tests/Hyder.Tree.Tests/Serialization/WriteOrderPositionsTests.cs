using FsCheck;
using FsCheck.Fluent;
using Hyder.Tree.Serialization;
using Xunit;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>
/// The intention encoder's position table: whatever references are collected, in whatever order
/// and however often each position, it seals into the sorted distinct table and answers each
/// reference, asked for in the order collected, with its position's index; by comparison below
/// <see cref="WriteOrderPositions.RadixFrom"/> references, by radix from there, and by the general
/// comparison path when a position's offset and a reference's number do not fit one word.
/// </summary>
public sealed class WriteOrderPositionsTests
{
    private static readonly Gen<long[]> References = PositionTableTests.Positions(900);

    [Theory]
    [InlineData(63)]
    [InlineData(20)]
    public void EveryReferenceGetsItsPositionsIndexInTheSortedDistinctTable(int packedBits)
    {
        // One table for every case: each starts from the last one's Clear, and grows past its first capacity.
        var table = new WriteOrderPositions(8) { PackedBits = packedBits };
        var property = Prop.ForAll(Arb.From(References), references =>
        {
            table.Clear();
            var shuffled = references.ToArray();
            new Random(references.Length).Shuffle(shuffled);
            foreach (var p in shuffled)
            {
                table.Add(p);
            }

            var expected = references.Distinct().Order().ToArray();
            var sealedTable = table.Seal().ToArray();
            var indexes = shuffled.Select(table.IndexOf).ToArray();
            return table.Count == expected.Length
                && table.References == shuffled.Length
                && table.AllWritten
                && sealedTable.SequenceEqual(expected)
                && indexes.Select((index, i) => expected[index] == shuffled[i]).All(ok => ok);
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(300).WithQuietOnSuccess(true), property);
    }

    [Fact]
    public void OnlyPersistentVersionsAreReferences()
    {
        var table = new WriteOrderPositions();
        table.Add(NodeVersion.None);
        table.Add(NodeVersion.Ephemeral(3, 17));
        table.Add(NodeVersion.Persistent(42, 5));
        table.Add(NodeVersion.Persistent(42, 9));
        Assert.Equal([42L], table.Seal().ToArray());
        Assert.Equal(2, table.References);
        Assert.Equal(0, table.IndexOf(42));
        Assert.False(table.AllWritten);
        Assert.Equal(0, table.IndexOf(42));
        Assert.True(table.AllWritten);
    }

    [Fact]
    public void AWriterOutOfTheCollectorsOrderIsRefused()
    {
        var table = new WriteOrderPositions();
        table.Add(7);
        table.Add(9);
        Assert.Throws<InvalidOperationException>(() => table.IndexOf(7));
        Assert.Throws<InvalidOperationException>(() => table.Count);
        table.Seal();

        // Asked for 9 where 7 was collected first: refused, and the reference is still the next.
        var wrong = Assert.Throws<InvalidOperationException>(() => table.IndexOf(9));
        Assert.Contains("collected as 7", wrong.Message);
        Assert.Equal(0, table.IndexOf(7));
        Assert.Equal(1, table.IndexOf(9));
        Assert.Throws<InvalidOperationException>(() => table.IndexOf(9));
        Assert.Throws<InvalidOperationException>(() => table.Add(11));
        Assert.Throws<InvalidOperationException>(() => table.Seal());

        table.Clear();
        Assert.Equal(0, table.References);
        Assert.Empty(table.Seal().ToArray());
        Assert.True(table.AllWritten);
    }
}

/// <summary>The writer's reserved span: records written straight into it read back as the field-by-field writes would have written them.</summary>
public sealed class ByteWriterReserveTests
{
    [Fact]
    public void ASpanWrittenRecordEqualsTheFieldByFieldOne()
    {
        var byField = new ByteWriter(16);
        var bySpan = new ByteWriter(16);
        var payload = Enumerable.Range(0, 300).Select(i => (byte)i).ToArray();
        foreach (var v in new ulong[] { 0, 1, 127, 128, 16_383, 16_384, uint.MaxValue, ulong.MaxValue })
        {
            byField.Varint(v);
            byField.Bytes(payload.AsSpan(0, (int)(v % 300)));
            var s = bySpan.Reserve(10 + 5 + 300);
            var at = ByteWriter.Varint(s, 0, v);
            at = ByteWriter.Bytes(s, at, payload.AsSpan(0, (int)(v % 300)));
            bySpan.Advance(at);
        }

        Assert.Equal(byField.Written.ToArray(), bySpan.Written.ToArray());
    }

    [Fact]
    public void AdvancingPastTheBufferIsRefused()
    {
        var w = new ByteWriter(16);
        var room = w.Reserve(4).Length;
        Assert.Throws<ArgumentOutOfRangeException>(() => w.Advance(room + 1));
        Assert.Throws<ArgumentOutOfRangeException>(() => w.Advance(-1));
        w.Advance(room);
        Assert.Equal(room, w.Length);
    }
}
