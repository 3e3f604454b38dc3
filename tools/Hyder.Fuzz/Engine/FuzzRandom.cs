namespace Hyder.Fuzz.Engine;

/// <summary>
/// A seeded generator (SplitMix64) whose sequence is fixed by this file alone, so a case number
/// replays to the same bytes on any runtime version (System.Random promises that only for itself).
/// </summary>
public sealed class FuzzRandom(ulong seed)
{
    private ulong _state = seed;

    /// <summary>The generator of case <paramref name="caseNumber"/> of a run seeded with <paramref name="seed"/>.</summary>
    public static FuzzRandom ForCase(ulong seed, long caseNumber) => new(Mix(Mix(seed) ^ (ulong)caseNumber));

    /// <summary>SplitMix64's finalizer: a bijection that spreads every input bit over the output.</summary>
    public static ulong Mix(ulong z)
    {
        z += 0x9E3779B97F4A7C15;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
        return z ^ (z >> 31);
    }

    /// <summary>The next 64 random bits.</summary>
    public ulong NextU64()
    {
        _state += 0x9E3779B97F4A7C15;
        var z = _state;
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EB;
        return z ^ (z >> 31);
    }

    /// <summary>A value in [0, <paramref name="maxExclusive"/>); 0 when the range is empty.</summary>
    public int Next(int maxExclusive) => maxExclusive <= 1 ? 0 : (int)(NextU64() % (ulong)maxExclusive);

    /// <summary>A value in [<paramref name="min"/>, <paramref name="maxExclusive"/>).</summary>
    public int Next(int min, int maxExclusive) => min + Next(maxExclusive - min);

    /// <summary>True once in <paramref name="n"/> draws on average.</summary>
    public bool OneIn(int n) => Next(n) == 0;

    /// <summary>A random byte.</summary>
    public byte NextByte() => (byte)NextU64();

    /// <summary>Fills <paramref name="bytes"/> with random bytes.</summary>
    public void Fill(Span<byte> bytes)
    {
        for (var i = 0; i < bytes.Length; i++)
        {
            bytes[i] = NextByte();
        }
    }

    /// <summary>One of <paramref name="items"/>.</summary>
    public T Pick<T>(IReadOnlyList<T> items) => items[Next(items.Count)];
}
