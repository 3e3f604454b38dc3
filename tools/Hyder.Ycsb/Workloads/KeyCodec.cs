using System.Buffers.Binary;
using Hyder.Ycsb.Generators;

namespace Hyder.Ycsb.Workloads;

/// <summary>
/// Turns key numbers into fixed-size byte keys, compared as unsigned bytes. Ordered keys are the
/// number big-endian (so key order is number order). Hashed keys (YCSB's default
/// <c>insertorder=hashed</c>) pass the number through a bijective mix first, so consecutive inserts
/// land all over the key space and no two numbers share a key. Keys of 4 to 7 bytes hold 32 bits
/// of number, 8 bytes or more hold 64; longer keys are zero-padded.
/// </summary>
internal sealed class KeyCodec
{
    public KeyCodec(int keySize, bool hashed)
    {
        if (keySize < 4)
        {
            throw new ArgumentOutOfRangeException(nameof(keySize), keySize, "Keys need at least 4 bytes.");
        }

        KeySize = keySize;
        Hashed = hashed;
    }

    public int KeySize { get; }

    public bool Hashed { get; }

    /// <summary>How many distinct key numbers the size allows.</summary>
    public long Capacity => KeySize >= 8 ? long.MaxValue : 1L << 32;

    public void Encode(long number, Span<byte> destination)
    {
        if ((ulong)number >= (ulong)Capacity)
        {
            throw new ArgumentOutOfRangeException(nameof(number), number, $"{KeySize}-byte keys hold numbers below {Capacity}.");
        }

        destination = destination[..KeySize];
        if (KeySize >= 8)
        {
            var value = Hashed ? Rng.Mix64((ulong)number) : (ulong)number;
            BinaryPrimitives.WriteUInt64BigEndian(destination, value);
            destination[8..].Clear();
        }
        else
        {
            var value = Hashed ? Mix32((uint)number) : (uint)number;
            BinaryPrimitives.WriteUInt32BigEndian(destination, value);
            destination[4..].Clear();
        }
    }

    public byte[] Encode(long number)
    {
        var key = new byte[KeySize];
        Encode(number, key);
        return key;
    }

    /// <summary>A bijection on 32-bit values (the MurmurHash3 finalizer).</summary>
    internal static uint Mix32(uint h)
    {
        h ^= h >> 16;
        h *= 0x85EBCA6B;
        h ^= h >> 13;
        h *= 0xC2B2AE35;
        h ^= h >> 16;
        return h;
    }
}
