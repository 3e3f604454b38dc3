namespace Hyder.Tree.Tests.Serialization;

/// <summary>The random mix of operations the serialization tests run: gets, puts, deletes, inserts and scans.</summary>
internal static class RandomOperations
{
    /// <summary>Runs <paramref name="ops"/> random operations on keys below <paramref name="keySpace"/>.</summary>
    public static void Run(Transaction tx, Random random, int ops, int keySpace, Func<int, byte[]> key, Func<byte[]> payload)
    {
        var results = new List<KeyValuePair<byte[], byte[]>>();
        for (var o = 0; o < ops; o++)
        {
            var k = key(random.Next(keySpace));
            switch (random.Next(10))
            {
                case < 3:
                    tx.TryGet(k, out _);
                    break;
                case < 6:
                    tx.Put(k, payload());
                    break;
                case < 8:
                    tx.Delete(k);
                    break;
                case 8:
                    tx.Insert(k, payload());
                    break;
                default:
                    results.Clear();
                    var high = key(Math.Min(keySpace, random.Next(keySpace) + random.Next(20)));
                    if (Keys.Compare(k, high) <= 0)
                    {
                        tx.Scan(k, high, 1 + random.Next(10), results);
                    }

                    break;
            }
        }
    }
}
