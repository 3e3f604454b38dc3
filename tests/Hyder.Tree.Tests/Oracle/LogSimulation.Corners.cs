namespace Hyder.Tree.Tests.Oracle;

/// <summary>The corners of the key space and of scans that the classic logs never reach (issue 18).</summary>
internal static partial class LogSimulation
{
    private static readonly byte[] s_alphabet = [0x00, 0x01, (byte)'a', (byte)'b', 0x7F, 0xFE, 0xFF];

    private static readonly byte[] s_sharedPrefix = "HYDERKEY"u8.ToArray();

    /// <summary>
    /// <paramref name="count"/> distinct keys of 1 to 24 bytes, sorted ordinally (so key i &lt; key
    /// i + 1 and index ranges stay key ranges): short keys over a small alphabet with 0x00 and 0xFF,
    /// keys that are prefixes of others, the 8-byte prefix alone and keys longer than 8 bytes that
    /// share it.
    /// </summary>
    private static byte[][] CornerKeyTable(Random rng, int count)
    {
        var keys = new SortedSet<byte[]>(Keys.Comparer);
        var list = new List<byte[]>();
        byte Letter() => s_alphabet[rng.Next(s_alphabet.Length)];
        while (keys.Count < count)
        {
            byte[] key;
            switch (rng.Next(5))
            {
                case 0:
                    key = new byte[rng.Next(1, 4)];
                    for (var i = 0; i < key.Length; i++)
                    {
                        key[i] = Letter();
                    }

                    break;
                case 1:
                    key = [.. s_sharedPrefix, .. Enumerable.Range(0, rng.Next(0, 5)).Select(_ => Letter())];
                    break;
                case 2 when list.Count > 0:
                    // A key that extends another: the other is its prefix.
                    key = [.. list[rng.Next(list.Count)], .. Enumerable.Range(0, rng.Next(1, 4)).Select(_ => Letter())];
                    break;
                case 3 when list.Count > 0 && list[^1].Length > 1:
                    key = list[rng.Next(list.Count)] is { Length: > 1 } longer ? longer[..rng.Next(1, longer.Length)] : [Letter()];
                    break;
                default:
                    key = new byte[rng.Next(9, 25)];
                    rng.NextBytes(key);
                    s_sharedPrefix.CopyTo(key, 0);
                    break;
            }

            if (key.Length <= 24 && keys.Add(key))
            {
                list.Add(key);
            }
        }

        return [.. keys];
    }

    /// <summary>
    /// A scan from the corners: exclusive bounds, an open low bound, an empty range, bounds that
    /// lie between or outside the keys, the whole tree without a limit; sometimes appending to a
    /// list that already holds pairs. Returns the range, the limit and the pairs already in the list.
    /// </summary>
    private static (KeyRange Range, int Limit, int Prefilled) CornerScan(Random rng, byte[] low, byte[]? high, int limit)
    {
        var prefilled = rng.Next(4) == 0 ? rng.Next(1, 4) : 0;
        switch (rng.Next(7))
        {
            case 0:
                return (KeyRange.All, int.MaxValue, prefilled);
            case 1:
                return (new KeyRange(null, true, high, rng.Next(2) == 0), limit, prefilled);
            case 2:
                return (new KeyRange(low, false, high, false), rng.Next(2) == 0 ? limit : int.MaxValue, prefilled);
            case 3:
                // Empty: reversed bounds, or one key with an exclusive bound.
                return (rng.Next(2) == 0 && high is not null ? new KeyRange(high, true, low, rng.Next(2) == 0) : new KeyRange(low, rng.Next(2) == 0, low, false), limit, prefilled);
            case 4:
                // Bounds between keys: just after low (low + 0x00) to just before high's successor.
                return (new KeyRange([.. low, 0x00], true, high is null ? null : [.. high, 0x00], false), limit, prefilled);
            case 5:
                // Bounds outside the key space: below every key, above every key.
                return (new KeyRange([0x00], rng.Next(2) == 0, [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF], true), int.MaxValue, prefilled);
            default:
                return (new KeyRange(low, true, high, true), limit, prefilled);
        }
    }
}
