namespace Hyder.Tree.Tests.Serialization;

/// <summary>
/// The random mix of operations the serialization tests run: gets, puts, deletes, inserts and scans,
/// and with <c>commutativePercent</c> above 0 also commutative operations (a third of them on one
/// hot key) and some read-modify-write transactions.
/// </summary>
internal static class RandomOperations
{
    /// <summary>Runs <paramref name="ops"/> random operations on keys below <paramref name="keySpace"/>.</summary>
    public static void Run(Transaction tx, Random random, int ops, int keySpace, Func<int, byte[]> key, Func<byte[]> payload, int commutativePercent = 0)
    {
        var results = new List<KeyValuePair<byte[], byte[]>>();
        if (commutativePercent > 0 && random.Next(8) == 0)
        {
            tx.CommutativeMode = Hyder.Tree.Commutative.CommutativeMode.ReadModifyWrite;
        }

        for (var o = 0; o < ops; o++)
        {
            var k = key(random.Next(keySpace));
            if (commutativePercent > 0 && random.Next(100) < commutativePercent)
            {
                CommutativeOperation(tx, random, random.Next(3) == 0 ? key(0) : k);
                continue;
            }

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

    private static void CommutativeOperation(Transaction tx, Random random, byte[] k)
    {
        switch (random.Next(8))
        {
            case < 3:
                tx.Add(k, random.Next(-50, 50));
                break;
            case 3:
                tx.Add(k, random.Next(-50, 50), min: -1000, max: 1000);
                break;
            case 4:
                tx.Max(k, random.Next(-100, 100));
                break;
            case 5:
                tx.Min(k, random.Next(-100, 100));
                break;
            case 6:
                tx.OPut(k, random.Next(10), [(byte)random.Next(256)]);
                break;
            default:
                tx.TopKInsert(k, 3, random.Next(10), [(byte)random.Next(256)]);
                break;
        }
    }
}
