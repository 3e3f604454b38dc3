using Hyder.Tree.Serialization;
using Xunit;
using Xunit.Abstractions;
using static Hyder.Tree.Tests.TestData;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>A replica that melds decoded intentions reaches the same states, node for node, as the server that ran them.</summary>
public sealed class IntentionRoundTripTests(ITestOutputHelper output)
{
    [Theory]
    [InlineData(1, 8192, 300, 150, 1, 8)]
    [InlineData(2, 8192, 64, 32, 4, 6)]
    [InlineData(3, 8192, 16, 8, 8, 10)]
    [InlineData(4, 256, 200, 100, 3, 6)]
    [InlineData(5, 8192, 1000, 0, 2, 10)]
    [InlineData(6, 4096, 4, 4, 6, 4)]
    public void AReplicaMeldingDecodedIntentionsReachesTheSameStates(int seed, int blockSize, int keySpace, int initialKeys, int concurrency, int maxOps)
    {
        var payload = blockSize < 1024 ? 100 : 8;
        var r = new Replica(seed, blockSize, keySpace, initialKeys, payload);
        for (var step = 0; step < 120; step++)
        {
            r.Step(1 + (step % concurrency), maxOps);
        }

        Assert.Equal(TreeInspector.StateHash(r.A.Current.Root), TreeInspector.StateHash(r.B.Current.Root));
        Assert.Equal(Contents(r.A.Current), Contents(r.B.Current));
        Assert.True(r.Intentions > 50, "the run produced almost no intentions");
        if (blockSize < 1024)
        {
            Assert.True(r.MultiBlock > 10, "small blocks should give multi-block intentions");
        }

        output.WriteLine($"{r.Intentions} intentions, {r.Commits} committed, {r.MultiBlock} multi-block, {r.EncodedBytes} bytes");
    }

    [Theory]
    [InlineData(11, 8192, 300, 150, 3, 8)]
    [InlineData(12, 256, 64, 32, 6, 6)]
    [InlineData(13, 8192, 8, 8, 8, 10)]
    public void AReplicaMeldingDecodedIntentionsWithOperationsReachesTheSameStates(int seed, int blockSize, int keySpace, int initialKeys, int concurrency, int maxOps)
    {
        var r = new Replica(seed, blockSize, keySpace, initialKeys, blockSize < 1024 ? 100 : 8) { CommutativePercent = 40 };
        for (var step = 0; step < 150; step++)
        {
            r.Step(1 + (step % concurrency), maxOps);
        }

        Assert.Equal(TreeInspector.StateHash(r.A.Current.Root), TreeInspector.StateHash(r.B.Current.Root));
        Assert.Equal(Contents(r.A.Current), Contents(r.B.Current));
        Assert.True(r.WithOperations > r.Intentions / 4, $"only {r.WithOperations} of {r.Intentions} intentions carried operations");
        Assert.True(r.OperationAborts > 0, "no list failed in meld: the mix does not reach BoundViolated or TypeMismatch");
        output.WriteLine($"{r.Intentions} intentions ({r.WithOperations} with operations), {r.Commits} committed, {r.OperationAborts} aborted applying a list");
    }

    [Fact]
    public void OperationListsRoundTripNodeForNode()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var s = db.PinCurrent();
        var tx = db.BeginAt(s);
        tx.Add(K("b"), 3, min: 0);
        tx.TopKInsert(K("bb"), 2, 7, K("x"));
        tx.Put(K("f"), K("y"));
        tx.OPut(K("f"), 1, K("z"));
        tx.TryGet(K("d"), out _);
        tx.Max(K("d"), 4);
        var i = tx.Complete()!;
        Assert.True(i.HasOperations);
        var e = IntentionEncoder.Encode(i, 128);
        var final = e.Finish([.. Enumerable.Range(0, e.Parts.Count).Select(p => 10L + p)]);
        var d = IntentionDecoder.Decode(final.Span, e.Parts, s, new Memory.NodePool(64));
        Assert.True(d.HasOperations);
        Compare(i.Root, d.Root, i, d);
        db.Release(s);
    }

    [Fact]
    public void AnEncodedIntentionIsSealedNodeForNodeAsTheTreeWalkSealsOne()
    {
        // The encoder hands its post-order list to the seal; twin transactions on twin databases,
        // one encoded before its seal and one not, must come out with the same versions.
        var keys = Enumerable.Range(0, 40).Select(k => $"k{k:D2}").ToArray();
        var a = Load(keys);
        var b = Load(keys);
        Intention Run(Database db)
        {
            var tx = db.BeginAt(db.PinCurrent());
            tx.TryGet(K("k03"), out _);
            tx.TryGet(K("k31"), out _);
            tx.Put(K("k17"), K("x"));
            tx.Put(K("k225"), K("new"));
            tx.Delete(K("k08"));
            tx.TryGet(K("k39"), out _);
            return tx.Complete()!;
        }

        var encoded = Run(a);
        var walked = Run(b);
        IntentionEncoder.Encode(encoded, 256);
        a.Append(encoded);
        b.Append(walked);

        Assert.True(walked.NodeCount > 10, $"only {walked.NodeCount} inside nodes");
        Assert.Equal(walked.NodeCount, encoded.NodeCount);
        var sealedNodes = CompareSealed(encoded.Root, walked.Root, encoded.Ordinal);
        Assert.Equal(walked.NodeCount, sealedNodes);
        Assert.Equal(a.Meld(encoded).Committed, b.Meld(walked).Committed);
        Assert.Equal(TreeInspector.StateHash(a.Current.Root), TreeInspector.StateHash(b.Current.Root));
    }

    private static int CompareSealed(Node? x, Node? y, long ordinal)
    {
        if (x is null || y is null || x.Owner != ordinal)
        {
            Assert.Equal(x is null, y is null);
            Assert.True(y is null || y.Owner != ordinal);
            return 0;
        }

        Assert.Equal(ordinal, y.Owner);
        Assert.Equal(x.Key, y.Key);
        Assert.Equal(x.Vn, y.Vn);
        return 1 + CompareSealed(x.Left, y.Left, ordinal) + CompareSealed(x.Right, y.Right, ordinal);
    }

    [Fact]
    public void APooledFinalBlockHoldsTheSameBytesAsAnAllocatedOne()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var s = db.PinCurrent();
        var tx = db.BeginAt(s);
        tx.TryGet(K("c"), out _);
        tx.Put(K("f"), new byte[300]);
        tx.Delete(K("a"));
        var i = tx.Complete()!;
        var e = IntentionEncoder.Encode(i, 128);
        Assert.NotEmpty(e.Parts);
        long[] positions = [.. Enumerable.Range(0, e.Parts.Count).Select(p => 10L + p)];
        var allocated = e.Finish(positions);
        var pooled = e.FinishPooled(positions, out var rented);
        Assert.Equal(allocated.ToArray(), pooled.ToArray());
        Assert.True(rented.Length >= pooled.Length);
        var d = IntentionDecoder.Decode(pooled.Span, e.Parts, s, new Memory.NodePool(64));
        Compare(i.Root, d.Root, i, d);
        System.Buffers.ArrayPool<byte>.Shared.Return(rented);

        // Released, the encoding builds no block either way.
        e.Release();
        Assert.Throws<ObjectDisposedException>(() => e.FinishPooled(positions, out _));
        db.Release(s);
    }

    [Fact]
    public void FormatTwoIntentionsStillDecodeAndCannotCarryOperations()
    {
        var db = Load("a", "b", "c");
        var s = db.PinCurrent();
        byte[] AsVersion2(ReadOnlyMemory<byte> block)
        {
            var b = block.ToArray();
            b[4] = 2;
            System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(b.AsSpan(10), BlockFormat.Checksum(b));
            return b;
        }

        var plain = db.BeginAt(s);
        plain.Put(K("b"), K("v"));
        var e = IntentionEncoder.Encode(plain.Complete()!);
        var old = AsVersion2(e.Finish([]));
        var d = IntentionDecoder.Decode(old, [], s, new Memory.NodePool(64));
        Assert.Equal(K("v"), Keys.Find(d.Root, K("b"))!.Payload);

        var withOps = db.BeginAt(s);
        withOps.Add(K("b"), 1);
        var eo = IntentionEncoder.Encode(withOps.Complete()!);
        var error = Assert.Throws<IntentionFormatException>(() => IntentionDecoder.Decode(AsVersion2(eo.Finish([])), [], s, new Memory.NodePool(64)));
        Assert.Contains("reserved bit", error.Message);
        db.Release(s);
    }

    [Fact]
    public void AnIntentionThatEmptiesTheTreeRoundTrips()
    {
        var r = new Replica(7, 8192, 3, 3);
        Assert.NotNull(r.A.Current.Root);
        var s = r.A.PinCurrent();
        var sb = r.B.PinCurrent();
        var tx = r.A.BeginAt(s);
        foreach (var (k, _) in TreeInspector.Contents(s.Root))
        {
            tx.Delete(k);
        }

        var i = tx.Complete()!;
        Assert.Null(i.Root);
        var e = IntentionEncoder.Encode(i);
        var ib = IntentionDecoder.Decode(e.Finish([]).Span, e.Parts, sb, r.DecodePool);
        Assert.Null(ib.Root);
        Assert.Equal(i.Deletes.Length, ib.Deletes.Length);
        r.A.Append(i);
        r.B.Append(ib);
        Assert.True(r.A.Meld(i).Committed);
        Assert.True(r.B.Meld(ib).Committed);
        Assert.Null(r.B.Current.Root);
        r.A.Release(s);
        r.B.Release(sb);

        // And from the empty tree onwards, with scans that find nothing (root ranges).
        for (var step = 0; step < 30; step++)
        {
            r.Step(2, 5);
        }
    }

    [Fact]
    public void DeletingTheRootKeyRoundTrips()
    {
        var r = new Replica(8, 8192, 50, 50);
        var s = r.A.PinCurrent();
        var sb = r.B.PinCurrent();
        var rootKey = s.Root!.Key;
        var tx = r.A.BeginAt(s, IsolationLevel.Serializable);
        tx.Delete(rootKey);
        var other = r.A.BeginAt(s, IsolationLevel.Serializable);
        other.TryGet(rootKey, out _);
        other.Put(K("k000001x"), K("v"));
        foreach (var t in new[] { tx, other })
        {
            var i = t.Complete()!;
            var e = IntentionEncoder.Encode(i);
            var ib = IntentionDecoder.Decode(e.Finish([]).Span, e.Parts, sb, r.DecodePool);
            r.A.Append(i);
            r.B.Append(ib);
            var oa = r.A.Meld(i);
            var ob = r.B.Meld(ib);
            Assert.Equal(oa.Committed, ob.Committed);
            Assert.Equal(TreeInspector.StateHash(r.A.Current.Root), TreeInspector.StateHash(r.B.Current.Root));
        }

        r.A.Release(s);
        r.B.Release(sb);
    }

    [Fact]
    public void DecodedNodesKeepTheirSourcesAndTheHeaderTellsWhatToFetch()
    {
        var db = Load("a", "b", "c", "d", "e", "f", "g");
        var s = db.PinCurrent();
        var tx = db.BeginAt(s);
        tx.TryGet(K("a"), out _);
        tx.Put(K("f"), K("x"));
        var i = tx.Complete()!;
        var e = IntentionEncoder.Encode(i, 128);
        var positions = Enumerable.Range(0, e.Parts.Count).Select(p => 10L + p).ToArray();
        var final = e.Finish(positions);
        var header = IntentionDecoder.ReadHeader(final.Span);
        Assert.Equal(positions, header.PartPositions);
        Assert.Equal(e.Nonce, header.Nonce);
        Assert.Equal(s.Sequence, header.SnapshotSequence);
        Assert.Equal(IntentionEncoder.PostOrder(i.Root, OwnerRange.Of(i)).Count, header.NodeCount);
        var d = IntentionDecoder.Decode(final.Span, e.Parts, s, new Memory.NodePool(64));
        Compare(i.Root, d.Root, i, d);
        db.Release(s);
    }

    private static void Compare(Node? x, Node? y, Intention ix, Intention iy)
    {
        if (x is null || y is null)
        {
            Assert.Same(x, y);
            return;
        }

        var inside = x.Owner == ix.ExecutorToken;
        Assert.Equal(inside, y.Owner == iy.ExecutorToken);
        if (!inside)
        {
            Assert.Same(x, y);
            return;
        }

        Assert.Equal(x.Key, y.Key);
        Assert.Equal(x.Payload, y.Payload);
        Assert.Equal(x.Flags, y.Flags);
        Assert.Equal(x.Ssv, y.Ssv);
        Assert.Equal(x.Scv, y.Scv);
        Assert.Equal(x.Height, y.Height);
        Assert.Same(x.Source, y.Source);
        Compare(x.Left, y.Left, ix, iy);
        Compare(x.Right, y.Right, ix, iy);
    }
}
