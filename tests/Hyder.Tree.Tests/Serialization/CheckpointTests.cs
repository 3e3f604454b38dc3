using System.Buffers.Binary;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>A server restarted from a checkpoint holds the same state, byte for byte, and melds on in step with its peers.</summary>
public sealed class CheckpointTests(ITestOutputHelper output)
{
    private sealed class LogSource(Replica replica) : IPersistentNodeSource
    {
        public int Reads { get; private set; }

        public (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position)
        {
            Reads++;

            // A real log answers a read of a position that holds no intention with an error of its own.
            return replica.Log.TryGetValue(position, out var blocks) ? blocks : throw new IntentionFormatException($"no intention at position {position}");
        }
    }

    private static byte[] Metadata(Database db)
    {
        // What a server would keep: the restart ordinal (the last intention melded, which is later
        // than the state's sequence when the last ones aborted) and final meld's next ephemeral id.
        var m = new byte[16];
        BinaryPrimitives.WriteInt64LittleEndian(m, db.LastAppended);
        BinaryPrimitives.WriteInt64LittleEndian(m.AsSpan(8), db.FinalMeld.NextEphemeralSequence);
        return m;
    }

    [Theory]
    [InlineData(1, 8192, 300, 200, 4)]
    [InlineData(2, 256, 64, 40, 6)]
    [InlineData(3, 1024, 16, 8, 8)]
    [InlineData(4, 8192, 2000, 1500, 3)]
    public void ARestoredServerMatchesItsPeersAndMeldsOnInStep(int seed, int blockSize, int keySpace, int initialKeys, int concurrency)
    {
        var r = new Replica(seed, blockSize, keySpace, initialKeys, blockSize < 1024 ? 40 : 8);
        for (var step = 0; step < 80; step++)
        {
            r.Step(1 + (step % concurrency), 6);
        }

        var state = r.A.PinCurrent();
        var ephemeral = CountEphemeral(state.Root);
        Assert.True(ephemeral > 0, "the run left no ephemeral node in the state");
        var encoded = CheckpointEncoder.Encode(state, Metadata(r.A), blockSize);
        var final = encoded.Finish(Enumerable.Range(0, encoded.Parts.Count).Select(p => 5_000_000L + p).ToArray());
        Assert.Equal(state.Sequence, CheckpointDecoder.ReadSequence(final.Span));
        var source = new LogSource(r);
        var root = CheckpointDecoder.Load(final.Span, encoded.Parts, source, new NodePool(1024), out var metadata);

        Assert.Equal(TreeInspector.StateHash(state.Root), TreeInspector.StateHash(root));
        Assert.Equal(TreeInspector.Contents(state.Root).Select(p => Convert.ToHexString(p.Key) + "=" + Convert.ToHexString(p.Value)),
            TreeInspector.Contents(root).Select(p => Convert.ToHexString(p.Key) + "=" + Convert.ToHexString(p.Value)));
        TreeInspector.ValidateState(root);
        output.WriteLine($"state #{state.Sequence}: {ephemeral} ephemeral nodes, {encoded.StreamLength} checkpoint bytes in {encoded.Parts.Count + 1} blocks, {source.Reads} intentions read");

        var lastMelded = BinaryPrimitives.ReadInt64LittleEndian(metadata);
        var nextEphemeral = BinaryPrimitives.ReadInt64LittleEndian(metadata.AsSpan(8));
        r.A.Release(state);
        r.C = Database.Restore(root, CheckpointDecoder.ReadSequence(final.Span), lastMelded, finalMeldThreadId: 3, nextEphemeral);
        for (var step = 0; step < 60; step++)
        {
            r.Step(1 + (step % concurrency), 6);
        }

        Assert.Equal(TreeInspector.StateHash(r.A.Current.Root), TreeInspector.StateHash(r.C.Current.Root));
        Assert.Equal(r.A.FinalMeld.NextEphemeralSequence, r.C.FinalMeld.NextEphemeralSequence);
    }

    [Fact]
    public void AnEmptyStateRoundTrips()
    {
        var db = new Database();
        var encoded = CheckpointEncoder.Encode(db.Current, [1, 2, 3]);
        var root = CheckpointDecoder.Load(encoded.Finish([]).Span, encoded.Parts, new ThrowingSource(), new NodePool(16), out var metadata);
        Assert.Null(root);
        Assert.Equal(new byte[] { 1, 2, 3 }, metadata);
    }

    [Fact]
    public void DamagedCheckpointsFailCleanly()
    {
        var r = new Replica(9, 8192, 64, 40);
        for (var step = 0; step < 30; step++)
        {
            r.Step(3, 4);
        }

        var encoded = CheckpointEncoder.Encode(r.A.Current, "meta"u8);
        var final = encoded.Finish([]).ToArray();
        var source = new LogSource(r);
        int rejected = 0, accepted = 0;
        for (var bit = BlockFormat.HeaderSize * 8; bit < final.Length * 8; bit++)
        {
            var copy = (byte[])final.Clone();
            copy[bit / 8] ^= (byte)(1 << (bit % 8));
            Assert.Throws<IntentionFormatException>(() => CheckpointDecoder.Load(copy, [], source, new NodePool(16), out _));
            BinaryPrimitives.WriteUInt32LittleEndian(copy.AsSpan(10), Crc32C.Compute(copy.AsSpan(BlockFormat.HeaderSize)));
            try
            {
                CheckpointDecoder.Load(copy, [], source, new NodePool(16), out _);
                accepted++;
            }
            catch (IntentionFormatException)
            {
                rejected++;
            }
        }

        output.WriteLine($"{rejected} resealed flips rejected, {accepted} loaded (payload bits)");
        Assert.True(rejected > 100);
    }

    private static int CountEphemeral(Node? n) => n is null ? 0 : (n.Vn.IsEphemeral ? 1 : 0) + CountEphemeral(n.Left) + CountEphemeral(n.Right);

    private sealed class ThrowingSource : IPersistentNodeSource
    {
        public (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position) =>
            throw new InvalidOperationException($"no intention at {position} should be read");
    }
}
