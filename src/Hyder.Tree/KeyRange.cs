using System.Runtime.CompilerServices;

namespace Hyder.Tree;

/// <summary>
/// A key range with optional bounds, each inclusive or exclusive. Meld's recursion uses open
/// ranges split at LCS keys; dependency ranges of scans are closed.
/// </summary>
public readonly struct KeyRange
{
    /// <summary>Lower bound, or null for unbounded.</summary>
    public readonly byte[]? Low;

    /// <summary>Upper bound, or null for unbounded.</summary>
    public readonly byte[]? High;

    /// <summary>Whether <see cref="Low"/> itself is in the range.</summary>
    public readonly bool LowInclusive;

    /// <summary>Whether <see cref="High"/> itself is in the range.</summary>
    public readonly bool HighInclusive;

    /// <summary>Creates a range.</summary>
    public KeyRange(byte[]? low, bool lowInclusive, byte[]? high, bool highInclusive)
    {
        Low = low;
        High = high;
        LowInclusive = lowInclusive;
        HighInclusive = highInclusive;
    }

    /// <summary>Every key.</summary>
    public static KeyRange All => default;

    /// <summary>The closed range [low, high].</summary>
    public static KeyRange Closed(byte[] low, byte[] high) => new(low, true, high, true);

    /// <summary>True when the key lies in the range.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool Contains(byte[] key) => AboveLow(key) && BelowHigh(key);

    /// <summary>True when the key is not below the lower bound.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool AboveLow(byte[] key)
    {
        if (Low is null)
        {
            return true;
        }

        var c = Keys.Compare(key, Low);
        return c > 0 || (c == 0 && LowInclusive);
    }

    /// <summary>True when the key is not above the upper bound.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public bool BelowHigh(byte[] key)
    {
        if (High is null)
        {
            return true;
        }

        var c = Keys.Compare(key, High);
        return c < 0 || (c == 0 && HighInclusive);
    }

    /// <summary>The part of this range below <paramref name="key"/> (exclusive).</summary>
    public KeyRange Below(byte[] key) =>
        High is not null && Keys.Compare(High, key) < 0 ? this : new KeyRange(Low, LowInclusive, key, false);

    /// <summary>The part of this range above <paramref name="key"/> (exclusive).</summary>
    public KeyRange Above(byte[] key) =>
        Low is not null && Keys.Compare(Low, key) > 0 ? this : new KeyRange(key, false, High, HighInclusive);

    /// <summary>The part below <paramref name="key"/>, for a key known to lie in this range (no comparison).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public KeyRange SplitBelow(byte[] key) => new(Low, LowInclusive, key, false);

    /// <summary>The part above <paramref name="key"/>, for a key known to lie in this range (no comparison).</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public KeyRange SplitAbove(byte[] key) => new(key, false, High, HighInclusive);

    /// <summary>The intersection of two ranges (possibly empty).</summary>
    public KeyRange Intersect(in KeyRange other)
    {
        byte[]? low = Low;
        var lowInc = LowInclusive;
        if (other.Low is not null)
        {
            var c = low is null ? -1 : Keys.Compare(low, other.Low);
            if (c < 0 || (c == 0 && !other.LowInclusive))
            {
                low = other.Low;
                lowInc = other.LowInclusive;
            }
        }

        byte[]? high = High;
        var highInc = HighInclusive;
        if (other.High is not null)
        {
            var c = high is null ? 1 : Keys.Compare(high, other.High);
            if (c > 0 || (c == 0 && !other.HighInclusive))
            {
                high = other.High;
                highInc = other.HighInclusive;
            }
        }

        return new KeyRange(low, lowInc, high, highInc);
    }

    /// <summary>True when every key of <paramref name="other"/> lies in this range.</summary>
    public bool Covers(in KeyRange other)
    {
        if (Low is not null)
        {
            if (other.Low is null)
            {
                return false;
            }

            var c = Keys.Compare(other.Low, Low);
            if (c < 0 || (c == 0 && other.LowInclusive && !LowInclusive))
            {
                return false;
            }
        }

        if (High is not null)
        {
            if (other.High is null)
            {
                return false;
            }

            var c = Keys.Compare(other.High, High);
            if (c > 0 || (c == 0 && other.HighInclusive && !HighInclusive))
            {
                return false;
            }
        }

        return true;
    }

    /// <summary>True when no key can lie in the range.</summary>
    public bool IsEmpty
    {
        get
        {
            if (Low is null || High is null)
            {
                return false;
            }

            var c = Keys.Compare(Low, High);
            return c > 0 || (c == 0 && !(LowInclusive && HighInclusive));
        }
    }

    /// <inheritdoc/>
    public override string ToString() =>
        $"{(LowInclusive ? '[' : '(')}{(Low is null ? "-inf" : Keys.Format(Low))}, {(High is null ? "+inf" : Keys.Format(High))}{(HighInclusive ? ']' : ')')}";
}
