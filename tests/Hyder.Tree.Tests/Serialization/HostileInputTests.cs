using System.Buffers.Binary;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>
/// Malformed, truncated and hostile blocks fail with <see cref="IntentionFormatException"/> and
/// nothing else: no other exception, no hang, no allocation out of proportion to the input.
/// </summary>
public sealed class HostileInputTests(ITestOutputHelper output)
{
    private readonly NodePool _pool = new(1 << 12);

    private sealed record Sample(Database Db, DatabaseState Snapshot, byte[] Final, byte[][] Parts);

    /// <summary>Valid encodings on a snapshot: single-block and multi-block, with deletes, scans, reads and operation lists.</summary>
    private static List<Sample> Samples()
    {
        var samples = new List<Sample>();
        foreach (var (blockSize, payload) in new[] { (8192, 8), (256, 60) })
        {
            var r = new Replica(11, blockSize, 64, 40, payload);
            for (var step = 0; step < 20; step++)
            {
                r.Step(2, 4);
            }

            var s = r.A.PinCurrent();
            var tx = r.A.BeginAt(s, IsolationLevel.Serializable);
            tx.TryGet(r.Key(3), out _);
            tx.Put(r.Key(10), r.Payload());
            tx.Put(r.Key(77), r.Payload());
            tx.Delete(TreeInspector.Contents(s.Root)[5].Key);
            tx.Scan(r.Key(20), r.Key(30), 4, []);
            tx.Add(r.Key(11), 5, min: -100);
            tx.OPut(r.Key(12), 2, r.Payload());
            tx.TopKInsert(r.Key(13), 3, 7, r.Payload());
            var i = tx.Complete()!;
            Assert.True(i.HasOperations);
            var e = IntentionEncoder.Encode(i, blockSize);
            var final = e.Finish(Enumerable.Range(0, e.Parts.Count).Select(p => 100L + (p * 3)).ToArray()).ToArray();
            samples.Add(new Sample(r.A, s, final, e.Parts.Select(p => p.ToArray()).ToArray()));
        }

        Assert.Contains(samples, x => x.Parts.Length >= 2);
        return samples;
    }

    /// <summary>Decodes and checks the outcome: success or <see cref="IntentionFormatException"/>, within an allocation bound.</summary>
    private bool Attempt(Sample s, byte[] final, IReadOnlyList<byte[]> parts)
    {
        var input = final.Length + parts.Sum(p => p.Length);
        var before = GC.GetAllocatedBytesForCurrentThread();
        try
        {
            var i = IntentionDecoder.Decode(final, parts.Select(p => (ReadOnlyMemory<byte>)p).ToList(), s.Snapshot, _pool);
            i.ReleasePins();
            IntentionDecoder.DecodeImage(final, parts.Select(p => (ReadOnlyMemory<byte>)p).ToList(), _pool);
            return true;
        }
        catch (IntentionFormatException e)
        {
            Assert.False(string.IsNullOrWhiteSpace(e.Message));
            return false;
        }
        finally
        {
            var allocated = GC.GetAllocatedBytesForCurrentThread() - before;
            Assert.True(allocated < (200L * input) + (256 << 10), $"decoding {input} bytes allocated {allocated}");
        }
    }

    private static byte[] Reseal(byte[] block)
    {
        var length = (int)Math.Min(BinaryPrimitives.ReadUInt32LittleEndian(block.AsSpan(6)), (uint)block.Length);
        if (length >= BlockFormat.HeaderSize)
        {
            BinaryPrimitives.WriteUInt32LittleEndian(block.AsSpan(10), BlockFormat.Checksum(block.AsSpan(0, length)));
        }

        return block;
    }

    [Fact]
    public void TheValidSamplesDecode()
    {
        foreach (var s in Samples())
        {
            Assert.True(Attempt(s, s.Final, s.Parts));
        }
    }

    [Fact]
    public void EverySingleBitFlipIsCaught()
    {
        var count = 0;
        foreach (var s in Samples())
        {
            for (var b = -1; b < s.Parts.Length; b++)
            {
                var block = b < 0 ? s.Final : s.Parts[b];
                for (var bit = 0; bit < block.Length * 8; bit++)
                {
                    var copy = (byte[])block.Clone();
                    copy[bit / 8] ^= (byte)(1 << (bit % 8));
                    var parts = s.Parts.ToArray();
                    var final = s.Final;
                    if (b < 0)
                    {
                        final = copy;
                    }
                    else
                    {
                        parts[b] = copy;
                    }

                    Assert.False(Attempt(s, final, parts), $"a flip of bit {bit} of block {b} went unnoticed");
                    count++;
                }
            }
        }

        output.WriteLine($"{count} bit flips rejected");
        Assert.True(count > 2000);
    }

    [Fact]
    public void BitFlipsUnderAValidChecksumFailCleanlyOrDecode()
    {
        // The CRC catches every flip above; with the CRC recomputed, the decoder itself must cope.
        int rejected = 0, accepted = 0;
        foreach (var s in Samples())
        {
            for (var b = -1; b < s.Parts.Length; b++)
            {
                var block = b < 0 ? s.Final : s.Parts[b];
                for (var bit = BlockFormat.HeaderSize * 8; bit < block.Length * 8; bit++)
                {
                    var copy = (byte[])block.Clone();
                    copy[bit / 8] ^= (byte)(1 << (bit % 8));
                    Reseal(copy);
                    var parts = s.Parts.ToArray();
                    var final = s.Final;
                    if (b < 0)
                    {
                        final = copy;
                    }
                    else
                    {
                        parts[b] = copy;
                    }

                    if (Attempt(s, final, parts))
                    {
                        accepted++;
                    }
                    else
                    {
                        rejected++;
                    }
                }
            }
        }

        output.WriteLine($"{rejected} rejected, {accepted} decoded to another well-formed intention (a payload or key bit, say)");
        Assert.True(rejected > 1000);
    }

    [Fact]
    public void TruncationAtEveryLengthIsCaught()
    {
        foreach (var s in Samples())
        {
            for (var b = -1; b < s.Parts.Length; b++)
            {
                var block = b < 0 ? s.Final : s.Parts[b];
                for (var length = 0; length < block.Length; length++)
                {
                    var parts = s.Parts.ToArray();
                    var final = s.Final;
                    foreach (var reseal in new[] { false, true })
                    {
                        var cut = block[..length];
                        if (reseal && length >= BlockFormat.HeaderSize)
                        {
                            BinaryPrimitives.WriteUInt32LittleEndian(cut.AsSpan(6), (uint)length);
                            Reseal(cut);
                        }

                        if (b < 0)
                        {
                            final = cut;
                        }
                        else
                        {
                            parts[b] = cut;
                        }

                        Assert.False(Attempt(s, final, parts), $"block {b} cut to {length} bytes (resealed: {reseal}) went unnoticed");
                    }
                }
            }
        }
    }

    [Fact]
    public void LengthFieldsAtTheExtremesAreCaught()
    {
        foreach (var s in Samples())
        {
            foreach (var value in new uint[] { 0, 1, BlockFormat.HeaderSize - 1, (uint)s.Final.Length + 1, BlockFormat.MaxBlockSize + 1, uint.MaxValue })
            {
                var copy = (byte[])s.Final.Clone();
                BinaryPrimitives.WriteUInt32LittleEndian(copy.AsSpan(6), value);
                Assert.False(Attempt(s, copy, s.Parts));
            }

            // Varint-coded counts and lengths in the body, set to 0 and to the largest varint, resealed.
            for (var at = BlockFormat.HeaderSize; at < s.Final.Length; at++)
            {
                foreach (var patch in new byte[][] { [0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01], [0xFF, 0xFF, 0xFF, 0x7F] })
                {
                    var copy = (byte[])s.Final.Clone();
                    var n = Math.Min(patch.Length, copy.Length - at);
                    patch.AsSpan(0, n).CopyTo(copy.AsSpan(at));
                    Attempt(s, Reseal(copy), s.Parts);
                }
            }
        }
    }

    [Fact]
    public void RandomBytesAreCaught()
    {
        var random = new Random(5);
        var s = Samples()[0];
        for (var t = 0; t < 1000; t++)
        {
            var junk = new byte[random.Next(0, 600)];
            random.NextBytes(junk);
            if (t % 2 == 0 && junk.Length >= BlockFormat.HeaderSize)
            {
                // Past the header checks, into the body parser.
                BlockFormat.Magic.CopyTo(junk);
                junk[4] = BlockFormat.Version;
                junk[5] = (byte)BlockKind.Intention;
                BinaryPrimitives.WriteUInt32LittleEndian(junk.AsSpan(6), (uint)junk.Length);
                Reseal(junk);
            }

            Attempt(s, junk, []);
            Assert.False(Attempt(s, s.Final, s.Parts.Length == 0 ? [junk] : [junk, .. s.Parts[1..]]));
        }
    }

    [Fact]
    public void PartsReorderedDuplicatedMissingOrForeignAreCaught()
    {
        var samples = Samples();
        var s = samples.Single(x => x.Parts.Length >= 2);
        Assert.False(Attempt(s, s.Final, s.Parts.Reverse().ToArray()));
        Assert.False(Attempt(s, s.Final, [s.Parts[0], .. s.Parts]));
        Assert.False(Attempt(s, s.Final, [s.Parts[0], s.Parts[0], .. s.Parts[2..]]));
        Assert.False(Attempt(s, s.Final, s.Parts[1..]));
        Assert.False(Attempt(s, s.Final, []));
        Assert.False(Attempt(s, s.Final, [s.Final, .. s.Parts[1..]]));

        // The same intention encoded again has another nonce: its parts do not mix with these.
        var again = Samples().Single(x => x.Parts.Length >= 2);
        Assert.NotEqual(BinaryPrimitives.ReadInt64LittleEndian(again.Parts[0].AsSpan(BlockFormat.HeaderSize)), BinaryPrimitives.ReadInt64LittleEndian(s.Parts[0].AsSpan(BlockFormat.HeaderSize)));
        Assert.False(Attempt(s, s.Final, [again.Parts[0], .. s.Parts[1..]]));
    }

    [Fact]
    public void AReferenceThatDoesNotResolveRejectsTheIntention()
    {
        var s = Samples()[0];

        // Against another state than the one it ran on.
        var empty = new Database();
        var e = Assert.Throws<IntentionFormatException>(() => IntentionDecoder.Decode(s.Final, [], empty.Current, _pool));
        Assert.Contains("ran on state", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void ControlBlocksRoundTripAndRejectDamage()
    {
        var block = BlockFormat.WriteControl("settings v1"u8, 256);
        Assert.Equal("settings v1"u8.ToArray(), BlockFormat.ReadControl(block).ToArray());
        Assert.True(BlockHeader.TryParse(block, out var header, out var error));
        Assert.Null(error);
        Assert.Equal(BlockKind.Control, header.Kind);
        Assert.Equal(block.Length, header.Length);
        block[^1] ^= 1;
        Assert.False(BlockHeader.TryParse(block, out _, out error));
        Assert.Contains("CRC mismatch", error, StringComparison.Ordinal);
        Assert.Throws<IntentionFormatException>(() => BlockFormat.ReadControl(block));
        Assert.Throws<IntentionFormatException>(() => BlockFormat.ReadControl(Samples()[0].Final));
    }

    [Fact]
    public void Crc32CMatchesTheStandardCheckValue() => Assert.Equal(0xE3069283u, Crc32C.Compute("123456789"u8));
}
