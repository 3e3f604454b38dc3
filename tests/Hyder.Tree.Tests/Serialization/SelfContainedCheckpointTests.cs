using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>Format-4 checkpoints: self-contained, streamed, found among other blocks of the log.</summary>
public sealed class SelfContainedCheckpointTests(ITestOutputHelper output)
{
    private static Replica Run(int seed, int blockSize, int steps = 60)
    {
        var r = new Replica(seed, blockSize, 300, 200, 8);
        for (var step = 0; step < steps; step++)
        {
            r.Step(1 + (step % 4), 6);
        }

        return r;
    }

    private static ReadOnlyMemory<byte> Foreign(int i)
    {
        // Another writer's blocks between the parts: an intention-like control block.
        return BlockFormat.WriteControl([(byte)i, 1, 2, 3]);
    }

    [Theory]
    [InlineData(1, 8192)]
    [InlineData(2, 256)]
    [InlineData(3, 1024)]
    public void ALoadNeedsNothingButTheCheckpointsBlocksAndSkipsOthersAndCopies(int seed, int blockSize)
    {
        var r = Run(seed, blockSize);
        var state = r.A.PinCurrent();
        var writer = new CheckpointWriter(state, "meta"u8, blockSize);
        var parts = writer.Parts().ToList();
        Assert.All(parts, p => Assert.True(p.Length <= blockSize));

        // Interleave other writers' blocks and a second copy of a part, as a busy log does.
        var log = new List<ReadOnlyMemory<byte>>();
        for (var i = 0; i < parts.Count; i++)
        {
            log.Add(parts[i]);
            log.Add(Foreign(i));
            if (i % 3 == 1)
            {
                log.Add(parts[i]);
            }
        }

        var final = writer.Finish(1000, 1000 + log.Count - 1, 990);
        var root = CheckpointReader.Load(final, log, new NodePool(1024), out var metadata);
        Assert.Equal(TreeInspector.StateHash(state.Root), TreeInspector.StateHash(root));
        TreeInspector.ValidateState(root);
        Assert.Equal("meta"u8.ToArray(), metadata);
        var info = CheckpointReader.ReadFinal(final);
        Assert.Equal((parts.Count, 1000L, 990L, state.Sequence, writer.NodeCount), (info.PartCount, info.FirstPart, info.NeedsFrom, info.StateSequence, info.NodeCount));
        output.WriteLine($"{writer.NodeCount} nodes, {writer.StreamLength} bytes in {parts.Count} parts of {blockSize} B");
        r.A.Release(state);
    }

    /// <summary>
    /// The asynchronous load (what a server does: each block arrives when its read completes, and
    /// each one reuses the reader's buffer) builds the same tree as the synchronous one, and fails
    /// the same way on a missing part.
    /// </summary>
    [Fact]
    public async Task LoadAsyncOverBlocksThatArriveLaterBuildsTheSameTree()
    {
        var r = Run(7, 256, 80);
        var state = r.A.PinCurrent();
        var writer = new CheckpointWriter(state, "meta"u8, 256);
        var parts = writer.Parts().Select(p => (ReadOnlyMemory<byte>)p).ToList();
        var log = parts.SelectMany((p, i) => new[] { p, Foreign(i) }).ToList();
        var final = writer.Finish(50, 50 + log.Count - 1, 49);
        Assert.True(parts.Count > 10);

        var suspended = 0;
        async IAsyncEnumerable<ReadOnlyMemory<byte>> Later(IReadOnlyList<ReadOnlyMemory<byte>> blocks)
        {
            var buffer = new byte[256];
            foreach (var block in blocks)
            {
                await Task.Yield();
                suspended++;
                block.CopyTo(buffer);
                yield return buffer.AsMemory(0, block.Length);
            }
        }

        var (root, metadata) = await CheckpointReader.LoadAsync(final, Later(log), new NodePool(1024));
        // Every block up to the last part arrived asynchronously; the other writer's block after it is not read.
        Assert.Equal(log.Count - 1, suspended);
        Assert.Equal(TreeInspector.StateHash(state.Root), TreeInspector.StateHash(root));
        TreeInspector.ValidateState(root);
        Assert.Equal("meta"u8.ToArray(), metadata);

        var missing = log.Where(b => !b.Equals(parts[2])).ToList();
        var e = await Assert.ThrowsAsync<IntentionFormatException>(() => CheckpointReader.LoadAsync(final, Later(missing), new NodePool(64)));
        Assert.Contains("part 3 comes before part 2", e.Message);
        r.A.Release(state);
    }

    [Fact]
    public void PartsAreCutAsTheTreeIsWalked()
    {
        var r = Run(4, 256, 80);
        var state = r.A.PinCurrent();
        var writer = new CheckpointWriter(state, [], 256);
        using var e = writer.Parts().GetEnumerator();
        Assert.True(e.MoveNext());

        // After the first part only about one part's worth of the stream has been encoded.
        Assert.True(writer.StreamLength < 2 * 256 + 1024, $"{writer.StreamLength} bytes encoded before the first part was taken");
        var count = 1;
        while (e.MoveNext())
        {
            count++;
        }

        Assert.True(count > 10);
        Assert.True(writer.StreamLength > 5 * 256);
        r.A.Release(state);
    }

    [Fact]
    public void AMissingOrReorderedPartFailsTheLoad()
    {
        var r = Run(5, 256);
        var state = r.A.PinCurrent();
        var writer = new CheckpointWriter(state, [], 256);
        var parts = writer.Parts().Select(p => (ReadOnlyMemory<byte>)p).ToList();
        var final = writer.Finish(10, 10 + parts.Count - 1, 9);
        Assert.True(parts.Count > 3);

        var missing = parts.Where((_, i) => i != 2).ToList();
        Assert.Contains("part 3 comes before part 2", Assert.Throws<IntentionFormatException>(() => CheckpointReader.Load(final, missing, new NodePool(64), out _)).Message);
        var cut = parts.Take(parts.Count - 1).ToList();
        Assert.Contains("of its", Assert.Throws<IntentionFormatException>(() => CheckpointReader.Load(final, cut, new NodePool(64), out _)).Message);

        // Another checkpoint's parts (another nonce) are not this one's.
        var other = new CheckpointWriter(state, [], 256);
        var otherParts = other.Parts().Select(p => (ReadOnlyMemory<byte>)p).ToList();
        Assert.Throws<IntentionFormatException>(() => CheckpointReader.Load(final, otherParts, new NodePool(64), out _));
        r.A.Release(state);
    }

    [Fact]
    public void DamagedPartsFailCleanly()
    {
        var r = Run(6, 512, 30);
        var state = r.A.PinCurrent();
        var writer = new CheckpointWriter(state, "m"u8, 512);
        var parts = writer.Parts().ToList();
        var final = writer.Finish(1, parts.Count, 1);
        var random = new Random(6);
        int rejected = 0, loaded = 0;
        for (var t = 0; t < 400; t++)
        {
            var copy = parts.Select(p => (byte[])p.Clone()).ToList();
            var i = random.Next(copy.Count);
            var bit = random.Next(BlockFormat.HeaderSize * 8, copy[i].Length * 8);
            copy[i][bit / 8] ^= (byte)(1 << (bit % 8));

            // Resealed, so the damage reaches the parser rather than the CRC.
            System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(copy[i].AsSpan(10), Crc32C.Compute(copy[i].AsSpan(BlockFormat.HeaderSize)));
            try
            {
                // The block CRC is what catches damage; resealed, a flip of a key, payload or flag bit may load.
                CheckpointReader.Load(final, copy.Select(p => (ReadOnlyMemory<byte>)p), new NodePool(64), out _);
                loaded++;
            }
            catch (IntentionFormatException)
            {
                rejected++;
            }
        }

        output.WriteLine($"{rejected} damaged checkpoints rejected, {loaded} loaded (key, payload or flag bits)");
        Assert.True(rejected > 100);
        r.A.Release(state);
    }

    [Fact]
    public void AnEmptyStateRoundTrips()
    {
        var db = new Database();
        var writer = new CheckpointWriter(db.Current, [1, 2]);
        var parts = writer.Parts().Select(p => (ReadOnlyMemory<byte>)p).ToList();
        Assert.Single(parts);
        var root = CheckpointReader.Load(writer.Finish(5, 5, 4), parts, new NodePool(16), out var metadata);
        Assert.Null(root);
        Assert.Equal(new byte[] { 1, 2 }, metadata);
    }

    [Fact]
    public void TheByReferenceLoaderRefusesFormat4()
    {
        var db = new Database();
        var writer = new CheckpointWriter(db.Current, []);
        _ = writer.Parts().ToList();
        Assert.Throws<IntentionFormatException>(() => CheckpointDecoder.Load(writer.Finish(5, 5, 4), [], new ThrowingSource(), new NodePool(16), out _));
    }

    private sealed class ThrowingSource : IPersistentNodeSource
    {
        public (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position) =>
            throw new InvalidOperationException($"no intention at {position} should be read");
    }
}
