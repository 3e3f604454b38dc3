using System.Collections.Concurrent;

namespace Hyder.Tree.Memory;

/// <summary>
/// Recycled value arrays of one database (docs/value-storage.md): a written value is copied into
/// an array taken here, and final meld gives the array back once no retained state, intention or
/// lease can reach it. Values then stop dying old in generation 2.
/// </summary>
/// <remarks>
/// <para>One bin per exact length from 1 to <see cref="MaxLength"/> bytes, made on first use; each
/// keeps at most <see cref="RetainedBytesPerLength"/> bytes of free arrays (16 at least), and all
/// bins together at most the pool's <see cref="MaxRetainedBytes"/>, so a workload whose value
/// lengths change cannot leave the old lengths' arrays piling up. What goes beyond is left to the
/// GC. Longer values and the empty value are never pooled.</para>
/// <para>Thread-safe: executor and decoder threads take, the final-meld thread returns.</para>
/// <para>Debug builds fill a returned array with <see cref="Poison"/> and check it is still poison
/// when taken again, so a read after the value was freed shows as a wrong value in the tests and
/// a write after it was freed fails the next take.</para>
/// </remarks>
public sealed class ValuePool
{
    /// <summary>The longest value pooled, bytes (the engine's default value limit).</summary>
    public const int MaxLength = 64 * 1024;

    /// <summary>The most bytes of free arrays one length keeps.</summary>
    public const int RetainedBytesPerLength = 16 * 1024 * 1024;

    /// <summary>The byte a freed array is filled with in Debug builds.</summary>
    public const byte Poison = 0xDB;

    /// <summary>The default of <see cref="MaxRetainedBytes"/>: 256 MiB.</summary>
    public const long DefaultMaxRetainedBytes = 256L * 1024 * 1024;

    private readonly Bin?[] _bins = new Bin?[MaxLength + 1];
    private long _retainedBytes;
    private long _taken;
    private long _reused;
    private long _returned;

    /// <summary>Creates a pool that keeps at most <paramref name="maxRetainedBytes"/> bytes of free arrays.</summary>
    public ValuePool(long maxRetainedBytes = DefaultMaxRetainedBytes)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(maxRetainedBytes);
        MaxRetainedBytes = maxRetainedBytes;
    }

    /// <summary>The most bytes of free arrays the pool keeps, over all lengths.</summary>
    public long MaxRetainedBytes { get; }

    /// <summary>Bytes of free arrays the pool holds now.</summary>
    public long RetainedBytes => Interlocked.Read(ref _retainedBytes);

    /// <summary>Arrays handed out (new or reused).</summary>
    public long Taken => Interlocked.Read(ref _taken);

    /// <summary>Arrays handed out that were reused rather than allocated.</summary>
    public long Reused => Interlocked.Read(ref _reused);

    /// <summary>Arrays given back by final meld.</summary>
    public long Returned => Interlocked.Read(ref _returned);

    /// <summary>True when a value of <paramref name="length"/> bytes is pooled.</summary>
    public static bool Serves(int length) => length is > 0 and <= MaxLength;

    /// <summary>
    /// A copy of <paramref name="value"/> in an array from the pool; <paramref name="pooled"/> says
    /// whether it is one (a length the pool does not serve gets an ordinary copy).
    /// </summary>
    public byte[] Copy(ReadOnlySpan<byte> value, out bool pooled)
    {
        if (!Serves(value.Length))
        {
            pooled = false;
            return value.IsEmpty ? [] : value.ToArray();
        }

        var array = Take(value.Length);
        value.CopyTo(array);
        pooled = true;
        return array;
    }

    /// <summary>Gives back an array this pool handed out, that nothing reaches any more.</summary>
    public void Return(byte[] array)
    {
        if (!Serves(array.Length))
        {
            ThrowHelper.ThrowArgument(nameof(array), $"a value of {array.Length} bytes never came from the value pool");
        }

        Interlocked.Increment(ref _returned);
#if DEBUG
        array.AsSpan().Fill(Poison);
#endif
        var bin = BinOf(array.Length);
        if (Interlocked.Increment(ref bin.Count) > bin.Limit)
        {
            Interlocked.Decrement(ref bin.Count);
            return;
        }

        if (Interlocked.Add(ref _retainedBytes, array.Length) > MaxRetainedBytes)
        {
            Interlocked.Add(ref _retainedBytes, -array.Length);
            Interlocked.Decrement(ref bin.Count);
            return;
        }

        bin.Free.Enqueue(array);
    }

    private byte[] Take(int length)
    {
        Interlocked.Increment(ref _taken);
        var bin = _bins[length];
        if (bin is null || !bin.Free.TryDequeue(out var array))
        {
            return GC.AllocateUninitializedArray<byte>(length);
        }

        Interlocked.Decrement(ref bin.Count);
        Interlocked.Add(ref _retainedBytes, -length);
        Interlocked.Increment(ref _reused);
#if DEBUG
        if (array.AsSpan().IndexOfAnyExcept(Poison) is var at and >= 0)
        {
            ThrowHelper.ThrowInvariant($"a freed value of {length} bytes was written after it went back to the value pool (byte {at})");
        }
#endif
        return array;
    }

    private Bin BinOf(int length)
    {
        var bin = Volatile.Read(ref _bins[length]);
        if (bin is null)
        {
            var made = new Bin(Math.Max(16, RetainedBytesPerLength / length));
            bin = Interlocked.CompareExchange(ref _bins[length], made, null) ?? made;
        }

        return bin;
    }

    private sealed class Bin(int limit)
    {
        public readonly ConcurrentQueue<byte[]> Free = new();
        public readonly int Limit = limit;
        public int Count;
    }
}
