using System.Buffers.Binary;

namespace Hyder.Testing;

/// <summary>
/// Values that describe themselves, for the tests of recycled values (docs/value-storage.md): the
/// key, a version and the key's complement, repeated, then the key's low byte, in a length that
/// depends on the key. An array freed too early and reused shows as a wrong value: another key's
/// bytes, or the pool's poison (0xDB) in Debug builds.
/// </summary>
/// <param name="lengthOf">A key's value length (a few classes, so freed arrays are taken again by other keys).</param>
/// <param name="keys">Keys are 0 to <paramref name="keys"/> − 1.</param>
public sealed class SelfDescribingValues(Func<int, int> lengthOf, int keys = int.MaxValue)
{
    /// <summary>The value of <paramref name="key"/> at <paramref name="version"/>.</summary>
    public byte[] Encode(int key, int version)
    {
        var value = new byte[lengthOf(key)];
        var i = 0;
        for (; i + 12 <= value.Length; i += 12)
        {
            BinaryPrimitives.WriteInt32LittleEndian(value.AsSpan(i), key);
            BinaryPrimitives.WriteInt32LittleEndian(value.AsSpan(i + 4), version);
            BinaryPrimitives.WriteInt32LittleEndian(value.AsSpan(i + 8), ~key);
        }

        value.AsSpan(i).Fill((byte)key);
        return value;
    }

    /// <summary>True when <paramref name="value"/> is exactly what <see cref="Encode"/> made for some key and version.</summary>
    public bool Decode(ReadOnlySpan<byte> value, out int key, out int version)
    {
        key = version = -1;
        if (value.Length < 12)
        {
            return false;
        }

        key = BinaryPrimitives.ReadInt32LittleEndian(value);
        version = BinaryPrimitives.ReadInt32LittleEndian(value[4..]);
        return key >= 0 && key < keys && value.Length == lengthOf(key) && value.SequenceEqual(Encode(key, version));
    }

    /// <summary>A value for a failure message: empty, all poison, or its first bytes.</summary>
    public static string Describe(ReadOnlySpan<byte> value) =>
        value.Length == 0 ? "an empty value"
        : value.IndexOfAnyExcept((byte)0xDB) < 0 ? $"{value.Length} bytes of the pool's poison"
        : $"{value.Length} bytes {Convert.ToHexString(value[..Math.Min(value.Length, 24)])}…";
}
