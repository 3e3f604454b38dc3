using System.Buffers.Binary;
using Hyder.Fuzz.Engine;
using Xunit;

namespace Hyder.Fuzz.Tests;

/// <summary>The mutation engine: deterministic per seed, and each mutation does what its name says.</summary>
public sealed class MutatorTests
{
    private static readonly byte[] s_input = [.. Enumerable.Range(0, 64).Select(i => (byte)(i * 3))];
    private static readonly Seed s_seed = new("sample", s_input, [new(8, 4, FieldKind.UInt, "length"), new(20, 0, FieldKind.Varint, "count")]);
    private static readonly Seed[] s_corpus = [s_seed, new("other", [.. Enumerable.Repeat((byte)0xAB, 40)])];

    [Fact]
    public void TheSameSeedGivesTheSameMutations()
    {
        var a = new FuzzRandom(42);
        var b = new FuzzRandom(42);
        for (var i = 0; i < 500; i++)
        {
            var x = Mutator.MutateOnce(s_input, a, s_seed, s_corpus, out string dx);
            var y = Mutator.MutateOnce(s_input, b, s_seed, s_corpus, out string dy);
            Assert.Equal(x, y);
            Assert.Equal(dx, dy);
        }
    }

    [Fact]
    public void AnotherSeedGivesOtherMutations()
    {
        var a = new FuzzRandom(1);
        var b = new FuzzRandom(2);
        var same = Enumerable.Range(0, 100).Count(_ =>
            Mutator.MutateOnce(s_input, a, s_seed, s_corpus, out string _).AsSpan().SequenceEqual(Mutator.MutateOnce(s_input, b, s_seed, s_corpus, out string _)));
        Assert.True(same < 10, $"{same} of 100 mutations were equal");
    }

    [Fact]
    public void TheGeneratorIsFixedByThisCodeAlone() =>
        // SplitMix64's published first output for seed 0; a change here changes every case number's bytes.
        Assert.Equal(0xE220A8397B1DCDAFUL, new FuzzRandom(0).NextU64());

    [Fact]
    public void EveryKindChangesTheInput()
    {
        var random = new FuzzRandom(9);
        foreach (var kind in Enum.GetValues<MutationKind>())
        {
            var changed = Enumerable.Range(0, 50).Count(_ => !Mutator.Mutate(kind, s_input, random, s_seed, s_corpus, out string _).AsSpan().SequenceEqual(s_input));
            Assert.True(changed >= 45, $"{kind} changed the input {changed} times in 50");
        }
    }

    [Fact]
    public void FlipBitFlipsExactlyThatBit()
    {
        for (var bit = 0; bit < s_input.Length * 8; bit += 7)
        {
            var output = Mutations.FlipBit(s_input, bit);
            var differing = Enumerable.Range(0, s_input.Length).Sum(i => System.Numerics.BitOperations.PopCount((uint)(output[i] ^ s_input[i])));
            Assert.Equal(1, differing);
            Assert.NotEqual(s_input[bit / 8], output[bit / 8]);
        }
    }

    [Fact]
    public void SetByteSetsOneByte()
    {
        var output = Mutations.SetByte(s_input, 5, 0xFF);
        Assert.Equal(0xFF, output[5]);
        Assert.Equal(s_input.Length - 1, Enumerable.Range(0, s_input.Length).Count(i => output[i] == s_input[i]));
    }

    [Fact]
    public void TruncateExtendAndSpliceKeepWhatTheySay()
    {
        Assert.Equal(s_input[..10], Mutations.Truncate(s_input, 10));
        var extended = Mutations.Extend(s_input, [1, 2, 3]);
        Assert.Equal([.. s_input, 1, 2, 3], extended);
        var other = s_corpus[1].Bytes;
        Assert.Equal([.. s_input[..12], .. other[30..]], Mutations.Splice(s_input, 12, other, 30));
    }

    [Fact]
    public void ChunksAreCopiedAndRemovedWhole()
    {
        var copied = Mutations.DuplicateChunk(s_input, 4, 6, 40);
        Assert.Equal([.. s_input[..40], .. s_input[4..10], .. s_input[40..]], copied);
        var removed = Mutations.RemoveChunk(s_input, 4, 6);
        Assert.Equal([.. s_input[..4], .. s_input[10..]], removed);
    }

    [Fact]
    public void IntegersAreWrittenInTheirWidthAndByteOrder()
    {
        var little = Mutations.SetInteger(s_input, 8, 4, bigEndian: false, int.MaxValue);
        Assert.Equal(int.MaxValue, BinaryPrimitives.ReadInt32LittleEndian(little.AsSpan(8)));
        var big = Mutations.SetInteger(s_input, 8, 4, bigEndian: true, uint.MaxValue - 1);
        Assert.Equal(uint.MaxValue - 1, BinaryPrimitives.ReadUInt32BigEndian(big.AsSpan(8)));
        Assert.Equal(s_input[..8], little[..8]);
        Assert.Equal(s_input[12..], little[12..]);

        // A field at the end is clipped, never grown.
        Assert.Equal(s_input.Length, Mutations.SetInteger(s_input, s_input.Length - 2, 8, false, ulong.MaxValue).Length);
        Assert.Contains(0x7FFF_FFFFUL, Mutations.IntegerExtremes(4));
        Assert.Contains(0x8000_0000UL, Mutations.IntegerExtremes(4));
        Assert.Contains(ulong.MaxValue, Mutations.IntegerExtremes(8));
        Assert.Contains(unchecked((ulong)long.MinValue), Mutations.IntegerExtremes(8));
    }

    [Fact]
    public void VarintsAreReplacedWholeAndReadBack()
    {
        byte[] input = [1, 2, 0xAC, 0x02, 9, 9];
        Assert.Equal(300UL, Mutations.ReadVarint(input, 2));
        Assert.Equal(2, Mutations.VarintLength(input, 2));
        foreach (var value in Mutations.VarintExtremes)
        {
            var output = Mutations.ReplaceVarint(input, 2, Mutations.EncodeVarint(value));
            Assert.Equal(value, Mutations.ReadVarint(output, 2));
            Assert.Equal([1, 2], output[..2]);
            Assert.Equal([9, 9], output[^2..]);
        }

        // The malformed ones: padded past the shortest form, unterminated, longer than 64 bits.
        var malformed = Mutations.MalformedVarints(300);
        Assert.Equal([0xAC, 0x82, 0x00], malformed[0]);
        Assert.Equal([0xAC, 0x82], malformed[1]);
        Assert.Equal(11, malformed[2].Length);
    }

    [Fact]
    public void KnownFieldsAreAimedAt()
    {
        var random = new FuzzRandom(3);
        var hits = Enumerable.Range(0, 200).Count(_ =>
        {
            Mutator.Mutate(MutationKind.SetInteger, s_input, random, s_seed, s_corpus, out var description);
            return description.Contains("length at 8", StringComparison.Ordinal);
        });
        Assert.True(hits > 100, $"the known field was chosen {hits} times in 200");
    }

    [Fact]
    public void ACaseStacksMutationsAndRecordsThem()
    {
        using var target = new ToyTarget(ToyBug.None);
        var lengths = Enumerable.Range(0, 300).Select(n => FuzzCase.Build(target, 5, n).Steps.Count).ToList();
        Assert.Equal(1, lengths.Min());
        Assert.True(lengths.Max() >= 5);
        Assert.True(lengths.Max() <= FuzzCase.MaxSteps);
    }
}
