using System.Numerics;
using System.Runtime.CompilerServices;

namespace Hyder.Ycsb.Generators;

/// <summary>
/// A small seeded pseudo-random generator (xoshiro256**, seeded through SplitMix64). Deterministic
/// across runtimes and platforms, unlike <see cref="Random"/> whose algorithm is an implementation
/// detail. A mutable struct: pass it by <c>ref</c>, never copy it by accident.
/// </summary>
internal struct Rng
{
    private ulong _s0;
    private ulong _s1;
    private ulong _s2;
    private ulong _s3;

    public Rng(ulong seed)
    {
        _s0 = SplitMix(ref seed);
        _s1 = SplitMix(ref seed);
        _s2 = SplitMix(ref seed);
        _s3 = SplitMix(ref seed);
    }

    /// <summary>A generator for one stream of a run: the same (seed, stream) gives the same numbers.</summary>
    public static Rng ForStream(ulong seed, ulong stream) => new(seed ^ Mix64(stream + 0x9E3779B97F4A7C15UL));

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public ulong NextUInt64()
    {
        var result = BitOperations.RotateLeft(_s1 * 5, 7) * 9;
        var t = _s1 << 17;
        _s2 ^= _s0;
        _s3 ^= _s1;
        _s1 ^= _s2;
        _s0 ^= _s3;
        _s2 ^= t;
        _s3 = BitOperations.RotateLeft(_s3, 45);
        return result;
    }

    /// <summary>Uniform in [0, 1) with 53 random bits.</summary>
    public double NextDouble() => (NextUInt64() >> 11) * (1.0 / (1UL << 53));

    /// <summary>Uniform in [0, bound), without modulo bias (Lemire's multiply-shift with rejection).</summary>
    public long NextInt64(long bound)
    {
        if (bound <= 0)
        {
            throw new ArgumentOutOfRangeException(nameof(bound), bound, "The bound must be positive.");
        }

        var range = (ulong)bound;
        var high = Math.BigMul(NextUInt64(), range, out var low);
        if (low < range)
        {
            var threshold = (0 - range) % range;
            while (low < threshold)
            {
                high = Math.BigMul(NextUInt64(), range, out low);
            }
        }

        return (long)high;
    }

    /// <summary>Fills <paramref name="destination"/> with random bytes.</summary>
    public void NextBytes(Span<byte> destination)
    {
        while (destination.Length >= 8)
        {
            System.Buffers.Binary.BinaryPrimitives.WriteUInt64LittleEndian(destination, NextUInt64());
            destination = destination[8..];
        }

        if (destination.Length > 0)
        {
            var last = NextUInt64();
            for (var i = 0; i < destination.Length; i++)
            {
                destination[i] = (byte)(last >> (8 * i));
            }
        }
    }

    /// <summary>The SplitMix64 finalizer: a bijection on 64-bit values.</summary>
    public static ulong Mix64(ulong z)
    {
        z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9UL;
        z = (z ^ (z >> 27)) * 0x94D049BB133111EBUL;
        return z ^ (z >> 31);
    }

    private static ulong SplitMix(ref ulong state)
    {
        state += 0x9E3779B97F4A7C15UL;
        return Mix64(state);
    }
}
