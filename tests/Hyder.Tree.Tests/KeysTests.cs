using FsCheck;
using FsCheck.Fluent;
using Xunit;

namespace Hyder.Tree.Tests;

public sealed class KeysTests
{
    private static readonly Gen<byte[]> ShortKeys =
        from length in Gen.Choose(0, 12)
        from bytes in Gen.ArrayOf(Gen.Elements<byte>(0, 1, 127, 255), length)
        select bytes;

    [Fact]
    public void PrefixComparisonOrdersKeysExactlyLikeByteWiseComparison()
    {
        var property = Prop.ForAll(Arb.From(ShortKeys), Arb.From(ShortKeys), (a, b) =>
        {
            var expected = Math.Sign(a.AsSpan().SequenceCompareTo(b));
            var na = new Node { Key = a };
            var nb = new Node { Key = b };

            // A copy takes the key's cached prefix and length with it (path copies do).
            var copy = new Node();
            copy.CopyKeyOf(nb);
            return Math.Sign(Keys.Compare(na, nb)) == expected
                && Math.Sign(Keys.Compare(a, Keys.Prefix(a), nb)) == expected
                && Math.Sign(Keys.Compare(na, copy)) == expected
                && Math.Sign(Keys.Compare(a, Keys.Prefix(a), copy)) == expected
                && copy.KeyLength == b.Length;
        });
        Check.One(Config.QuickThrowOnFailure.WithMaxTest(5000).WithQuietOnSuccess(true), property);
    }

    [Fact]
    public void KeyRangesSplitAndIntersectAsIntervals()
    {
        var r = new KeyRange([2], true, [8], false);
        Assert.True(r.Contains([2]));
        Assert.False(r.Contains([8]));
        Assert.False(r.SplitBelow([5]).Contains([5]));
        Assert.True(r.SplitAbove([5]).Contains([7]));
        Assert.True(r.Intersect(KeyRange.Closed([6], [9])).Contains([7]));
        Assert.False(r.Intersect(KeyRange.Closed([6], [9])).Contains([8]));
        Assert.True(r.Intersect(KeyRange.Closed([8], [9])).IsEmpty);
    }
}
