using Hyder.Tree.Serialization;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Tree.Tests.Serialization;

/// <summary>The encoding stays compact: the papers' target of under 30 bytes of metadata per node (DESIGN §4).</summary>
public sealed class EncodingSizeTests(ITestOutputHelper output)
{
    [Fact]
    public void ATypicalSerializableIntentionCostsUnder30BytesOfMetadataPerNode()
    {
        // 100K keys of 8 bytes with 8-byte payloads; 8 reads and 2 updates per transaction.
        const int KeyCount = 100_000;
        static byte[] Key(int k) => System.Text.Encoding.ASCII.GetBytes($"k{k:D7}");
        var db = new Database();
        db.BulkLoad(Enumerable.Range(0, KeyCount).Select(k => new KeyValuePair<byte[], byte[]>(Key(k), new byte[8])).ToList());

        // A few rounds of concurrent updates first, so the tree holds ephemeral nodes and many positions.
        var random = new Random(42);
        for (var round = 0; round < 20; round++)
        {
            var s = db.PinCurrent();
            var batch = Enumerable.Range(0, 5).Select(_ =>
            {
                var tx = db.BeginAt(s);
                tx.Put(Key(random.Next(KeyCount)), new byte[8]);
                return tx.Complete()!;
            }).ToList();
            foreach (var i in batch)
            {
                db.Append(i);
                db.Meld(i);
            }

            db.Release(s);
        }

        long metadata = 0, nodes = 0, total = 0;
        for (var t = 0; t < 200; t++)
        {
            using var tx = db.Begin(IsolationLevel.Serializable);
            for (var r = 0; r < 8; r++)
            {
                tx.TryGet(Key(random.Next(KeyCount)), out _);
            }

            tx.Put(Key(random.Next(KeyCount)), new byte[8]);
            tx.Put(Key(random.Next(KeyCount)), new byte[8]);
            var intention = tx.Complete()!;
            var encoded = IntentionEncoder.Encode(intention);
            var inside = IntentionEncoder.PostOrder(intention.Root, OwnerRange.Of(intention));
            var data = inside.Sum(n => n.Key.Length + n.Payload.Length);
            metadata += encoded.StreamLength - data;
            nodes += inside.Count;
            total += encoded.StreamLength + BlockFormat.HeaderSize + 8 + 5;
            db.Append(intention);
            db.Meld(intention);
        }

        var perNode = (double)metadata / nodes;
        output.WriteLine($"{nodes / 200.0:F1} nodes per intention, {perNode:F2} bytes of metadata per node (keys and payloads excluded), {total / 200.0:F0} bytes per intention with its block header");
        Assert.True(perNode < 30, $"{perNode:F2} bytes of metadata per node");
    }
}
