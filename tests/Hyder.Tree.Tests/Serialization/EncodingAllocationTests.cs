using Hyder.Tree.Serialization;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>
/// Encoding an executor's intention for the log allocates only the small encoding object: the
/// node list, the position table and the stream are the thread's scratch, and the final block is
/// built in a pooled buffer (DESIGN §7). Counted on the calling thread, so parallel tests do not disturb it.
/// </summary>
public sealed class EncodingAllocationTests(ITestOutputHelper output)
{
    [Fact]
    public void EncodingAnIntentionIntoAPooledFinalBlockAllocatesFarLessThanTheBlock()
    {
        const int KeyCount = 20_000;
        static byte[] Key(int k) => System.Text.Encoding.ASCII.GetBytes($"user{k:D12}");
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(0, KeyCount).Select(k => new KeyValuePair<byte[], byte[]>(Key(k), new byte[100]))]);
        var random = new Random(7);
        var intentions = new List<Intention>();
        for (var t = 0; t < 64; t++)
        {
            var tx = db.Begin();
            for (var r = 0; r < 8; r++)
            {
                tx.TryGet(Key(random.Next(KeyCount)), out _);
            }

            tx.Put(Key(random.Next(KeyCount)), new byte[1024]);
            tx.Put(Key(random.Next(KeyCount)), new byte[1024]);
            intentions.Add(tx.Complete()!);
        }

        long Encode(Intention i)
        {
            var encoded = IntentionEncoder.Encode(i);
            var block = encoded.FinishPooled([], out var rented);
            encoded.Release();
            System.Buffers.ArrayPool<byte>.Shared.Return(rented);
            return block.Length;
        }

        foreach (var i in intentions)
        {
            Encode(i); // warm up: the thread's scratch, the pool, the JIT
        }

        long bytes = 0;
        var before = GC.GetAllocatedBytesForCurrentThread();
        foreach (var i in intentions)
        {
            bytes += Encode(i);
        }

        var perIntention = (GC.GetAllocatedBytesForCurrentThread() - before) / (double)intentions.Count;
        var blockBytes = bytes / (double)intentions.Count;
        output.WriteLine($"{perIntention:F0} B allocated per intention whose final block is {blockBytes:F0} B");
        Assert.True(blockBytes > 2048, $"the test's intentions should encode to more than 2 KiB, not {blockBytes:F0} B");
        Assert.True(perIntention < 256, $"{perIntention:F0} B allocated per encoding (a {blockBytes:F0} B block or a table copy is back on the hot path)");
    }

    /// <summary>
    /// Every server reads the header of every intention in the log (the reader, one block at a
    /// time): a single-block intention's header is a value with no part positions and no error
    /// label built per block.
    /// </summary>
    [Fact]
    public void ReadingTheHeaderOfASingleBlockIntentionAllocatesNothing()
    {
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(0, 1000).Select(k => new KeyValuePair<byte[], byte[]>([(byte)(k >> 8), (byte)k], new byte[16]))]);
        var tx = db.Begin();
        tx.Put([0, 7], new byte[100]);
        var encoded = IntentionEncoder.Encode(tx.Complete()!);
        Assert.Empty(encoded.Parts);
        var block = encoded.Finish([]).ToArray();
        encoded.Release();

        var header = IntentionDecoder.ReadHeader(block); // warm up the JIT
        var before = GC.GetAllocatedBytesForCurrentThread();
        for (var i = 0; i < 100; i++)
        {
            header = IntentionDecoder.ReadHeader(block);
        }

        var allocated = GC.GetAllocatedBytesForCurrentThread() - before;
        output.WriteLine($"{allocated} B allocated by 100 header reads");
        Assert.Equal(encoded.Nonce, header.Nonce);
        Assert.Empty(header.PartPositions);
        Assert.Equal(0, allocated);
    }
}
