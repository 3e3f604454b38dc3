using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;
using Xunit;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>
/// Two databases fed the same log: A melds the executor's intentions, B (a replica that did not run
/// them) melds what it decodes from their blocks against its own states. Every step compares.
/// </summary>
internal sealed class Replica
{
    private readonly Random _random;
    private readonly int _blockSize;
    private long _nextPosition = 1_000_000;

    public Replica(int seed, int blockSize, int keySpace, int initialKeys, int payloadBytes = 8)
    {
        _random = new Random(seed);
        _blockSize = blockSize;
        KeySpace = keySpace;
        PayloadBytes = payloadBytes;
        var pairs = Enumerable.Range(0, keySpace).Where(_ => _random.Next(keySpace) < initialKeys)
            .Select(k => new KeyValuePair<byte[], byte[]>(Key(k), Payload())).ToList();
        if (pairs.Count > 0)
        {
            // The bulk load goes through the codec too (one big block size: it is one intention).
            var tx = A.Begin(IsolationLevel.SnapshotIsolation, A.MeldPool);
            tx.LoadSorted(pairs);
            RunRound([tx], A.Current, B.Current, blockSize: BlockFormat.MaxBlockSize);
        }
    }

    public Database A { get; } = new(finalMeldThreadId: 3);

    public Database B { get; } = new(finalMeldThreadId: 3);

    public NodePool DecodePool { get; } = new(NodePool.DefaultCapacity);

    /// <summary>A third server restored from a checkpoint, fed like B once set.</summary>
    public Database? C { get; set; }

    public int KeySpace { get; }

    public int PayloadBytes { get; }

    /// <summary>Share of commutative operations in the random transactions (0: none, the classic mix).</summary>
    public int CommutativePercent { get; init; }

    /// <summary>Intentions that carried operations.</summary>
    public int WithOperations { get; private set; }

    /// <summary>Aborts named BoundViolated or TypeMismatch (meld applied a list and it failed).</summary>
    public int OperationAborts { get; private set; }

    /// <summary>Every intention's blocks by ordinal (in this in-process log, position = ordinal).</summary>
    public Dictionary<long, (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts)> Log { get; } = [];

    public int Intentions { get; private set; }

    public int Commits { get; private set; }

    public long EncodedBytes { get; private set; }

    public int MultiBlock { get; private set; }

    public byte[] Key(int k) => System.Text.Encoding.ASCII.GetBytes($"k{k:D6}");

    public byte[] Payload()
    {
        var p = new byte[PayloadBytes];
        _random.NextBytes(p);
        return p;
    }

    /// <summary>Runs <paramref name="concurrency"/> random transactions on the current state, then melds them in order on both sides.</summary>
    public void Step(int concurrency, int maxOps)
    {
        var sa = A.PinCurrent();
        var sb = B.PinCurrent();
        Assert.Equal(sa.Sequence, sb.Sequence);
        var txs = new List<Transaction>();
        for (var j = 0; j < concurrency; j++)
        {
            var tx = A.BeginAt(sa, (IsolationLevel)_random.Next(4));
            RandomWork(tx, maxOps);
            txs.Add(tx);
        }

        var sc = C?.PinCurrent();
        Assert.Equal(sa.Sequence, sc?.Sequence ?? sa.Sequence);
        RunRound(txs, sa, sb, _blockSize, sc);
        A.Release(sa);
        B.Release(sb);
        if (sc is not null)
        {
            C!.Release(sc);
        }
    }

    private void RunRound(List<Transaction> txs, DatabaseState sa, DatabaseState sb, int blockSize, DatabaseState? sc = null)
    {
        var pending = new List<(Intention A, EncodedIntention Encoded)>();
        foreach (var tx in txs)
        {
            var i = tx.Complete();
            if (i is not null)
            {
                pending.Add((i, IntentionEncoder.Encode(i, blockSize)));
            }
        }

        foreach (var (ia, encoded) in pending)
        {
            var positions = encoded.Parts.Select(_ => _nextPosition++).ToArray();
            var final = encoded.Finish(positions);
            EncodedBytes += encoded.StreamLength;
            MultiBlock += encoded.Parts.Count > 0 ? 1 : 0;
            var header = IntentionDecoder.ReadHeader(final.Span);
            Assert.Equal(sa.Sequence, header.SnapshotSequence);
            Assert.Equal(ia.Isolation, header.Isolation);
            var ib = IntentionDecoder.Decode(final.Span, encoded.Parts, sb, DecodePool);
            A.Append(ia);
            B.Append(ib);
            Assert.Equal(ia.NodeCount, ib.NodeCount);
            Log[ia.Ordinal] = (final, encoded.Parts);
            var oa = A.Meld(ia);
            var ob = B.Meld(ib);
            Assert.Equal(oa.Committed, ob.Committed);
            Assert.Equal(oa.Cause, ob.Cause);
            Assert.Equal(oa.RejectReason, ob.RejectReason);
            Assert.Null(oa.RejectReason);
            Assert.Equal(TreeInspector.StateHash(A.Current.Root), TreeInspector.StateHash(B.Current.Root));
            if (sc is not null)
            {
                var ic = IntentionDecoder.Decode(final.Span, encoded.Parts, sc, DecodePool);
                C!.Append(ic);
                var oc = C.Meld(ic);
                Assert.Equal(oa.Committed, oc.Committed);
                Assert.Equal(TreeInspector.StateHash(A.Current.Root), TreeInspector.StateHash(C.Current.Root));
            }

            Intentions++;
            Commits += oa.Committed ? 1 : 0;
            WithOperations += ib.HasOperations ? 1 : 0;
            OperationAborts += oa.Cause is Meld.AbortCause.BoundViolated or Meld.AbortCause.TypeMismatch ? 1 : 0;
            Assert.Equal(ia.HasOperations, ib.HasOperations);
        }
    }

    private void RandomWork(Transaction tx, int maxOps) =>
        RandomOperations.Run(tx, _random, 1 + _random.Next(maxOps), KeySpace, Key, Payload, CommutativePercent);
}
