using System.Numerics;

namespace Hyder.Tree.Serialization;

/// <summary>
/// Least-significant-digit radix sort of non-negative offsets by their bytes, for the encoders'
/// position tables: the positions of one encoding lie within a few million of each other, so a
/// few linear passes sort them where a comparison sort's branches mispredict.
/// </summary>
internal static class ByteRadix
{
    /// <summary>
    /// Sorts <paramref name="keys"/> by <c>(key - min) &gt;&gt; shift</c>, whose largest value is
    /// below 2^<paramref name="bits"/>, one byte a pass (stable), using <paramref name="spare"/>
    /// (at least as long as the keys) as the second buffer. Returns whichever of the two holds the
    /// result (the keys after an even number of passes, the spare after an odd one).
    /// </summary>
    public static Span<long> Sort(Span<long> keys, Span<long> spare, long min, int shift, int bits)
    {
        var passes = (bits + 7) / 8;
        Span<int> starts = stackalloc int[256];
        var from = keys;
        var to = spare[..keys.Length];
        for (var pass = 0; pass < passes; pass++)
        {
            var at = shift + (pass * 8);
            starts.Clear();
            foreach (var k in from)
            {
                starts[(int)(((ulong)(k - min) >> at) & 0xFF)]++;
            }

            var sum = 0;
            for (var b = 0; b < starts.Length; b++)
            {
                var c = starts[b];
                starts[b] = sum;
                sum += c;
            }

            foreach (var k in from)
            {
                to[starts[(int)(((ulong)(k - min) >> at) & 0xFF)]++] = k;
            }

            var t = from;
            from = to;
            to = t;
        }

        return from;
    }

    /// <summary>The smallest and largest of <paramref name="keys"/>, which holds at least one.</summary>
    public static (long Min, long Max) Range(ReadOnlySpan<long> keys)
    {
        long min = keys[0], max = keys[0];
        foreach (var k in keys)
        {
            min = Math.Min(min, k);
            max = Math.Max(max, k);
        }

        return (min, max);
    }

    /// <summary>Bits needed for the offset <paramref name="span"/> (0 for 0).</summary>
    public static int BitsOf(ulong span) => 64 - BitOperations.LeadingZeroCount(span);
}
