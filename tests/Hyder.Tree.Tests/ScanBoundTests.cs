using Xunit;

namespace Hyder.Tree.Tests;

/// <summary>A scan's exclusive bounds: the rows and the phantom dependency both leave the bound's key out.</summary>
public sealed class ScanBoundTests
{
    private static byte[] Key(int i) => [(byte)i];

    [Fact]
    public void AnExclusiveHighBoundNeitherReturnsNorDependsOnItsKey()
    {
        var db = new Database();
        db.BulkLoad([.. Enumerable.Range(1, 9).Select(i => new KeyValuePair<byte[], byte[]>(Key(i), Key(i)))]);

        var scan = db.Begin();
        var rows = new List<KeyValuePair<byte[], byte[]>>();
        scan.Scan(new KeyRange(Key(3), false, Key(6), false), 100, rows);
        Assert.Equal([4, 5], rows.Select(r => (int)r.Key[0]));
        scan.Put(Key(20), [1]);

        // Changing the bounds' keys is no phantom for it; changing a key inside is.
        var writer = db.Begin();
        writer.Put(Key(6), [0]);
        writer.Put(Key(3), [0]);
        Assert.True(db.Commit(writer).Committed);
        Assert.True(db.Commit(scan).Committed);

        var inside = db.Begin();
        rows.Clear();
        inside.Scan(new KeyRange(Key(3), false, Key(6), false), 100, rows);
        inside.Put(Key(21), [1]);
        var other = db.Begin();
        other.Delete(Key(5));
        Assert.True(db.Commit(other).Committed);
        Assert.False(db.Commit(inside).Committed);
    }
}
