using Xunit;

namespace Hyder.Tree.Tests;

/// <summary>Flush intentions (meld paper §5): copies of ephemeral nodes that replace them in the state, changing no content and conflicting with nothing.</summary>
public sealed class FlushTests
{
    private static byte[] Key(int i) => [(byte)(i >> 8), (byte)i];

    internal static int EphemeralNodes(Node? n) => n is null ? 0 : (n.Vn.IsEphemeral ? 1 : 0) + EphemeralNodes(n.Left) + EphemeralNodes(n.Right);

    internal static void EphemeralKeys(Node? n, List<byte[]> keys)
    {
        if (n is null)
        {
            return;
        }

        if (n.Vn.IsEphemeral)
        {
            keys.Add(n.Key);
        }

        EphemeralKeys(n.Left, keys);
        EphemeralKeys(n.Right, keys);
    }

    [Fact]
    public void AFlushReplacesTheStatesEphemeralNodesWithoutChangingContentsOrAbortingConcurrentReaders()
    {
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(0, 500).Select(i => new KeyValuePair<byte[], byte[]>(Key(i), Key(i)))]);
        var rng = new Random(5);
        for (var round = 0; round < 40; round++)
        {
            // Concurrent transactions on one snapshot: their melds make ephemeral nodes.
            var txs = Enumerable.Range(0, 4).Select(_ => db.Begin()).ToList();
            foreach (var tx in txs)
            {
                tx.Put(Key(rng.Next(500)), [(byte)round]);
            }

            foreach (var tx in txs)
            {
                db.Commit(tx);
            }
        }

        var before = EphemeralNodes(db.Current.Root);
        Assert.True(before > 0, $"only {before} ephemeral nodes");
        var contents = TreeInspector.Contents(db.Current.Root).Select(p => Convert.ToHexString(p.Key) + Convert.ToHexString(p.Value)).ToList();

        // A reader that started before the flush and commits after it is not aborted by it.
        var reader = db.Begin();
        reader.TryGet(Key(7), out _);
        reader.Put(Key(8), [9]);

        var keys = new List<byte[]>();
        EphemeralKeys(db.Current.Root, keys);
        var flush = db.Begin(IsolationLevel.ReadCommitted);
        foreach (var k in keys)
        {
            Assert.True(flush.Flush(k));
        }

        var outcome = db.Commit(flush);
        Assert.True(outcome.Committed, outcome.ToString());
        Assert.Equal(0, EphemeralNodes(db.Current.Root));
        TreeInspector.ValidateState(db.Current.Root);
        Assert.Equal(contents, TreeInspector.Contents(db.Current.Root).Select(p => Convert.ToHexString(p.Key) + Convert.ToHexString(p.Value)).ToList());

        var r = db.Commit(reader);
        Assert.True(r.Committed, r.ToString());
    }
}
