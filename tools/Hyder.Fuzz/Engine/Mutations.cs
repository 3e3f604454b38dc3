using System.Buffers.Binary;

namespace Hyder.Fuzz.Engine;

/// <summary>
/// The mutations, each a pure function of its input and explicit parameters (the tests check that
/// each does what its name says); <see cref="Mutator"/> draws the parameters.
/// </summary>
public static class Mutations
{
    /// <summary>The values a fixed-width field is set to: the edges of its range and of int.</summary>
    public static ulong[] IntegerExtremes(int width)
    {
        var max = width == 8 ? ulong.MaxValue : (1UL << (8 * width)) - 1;
        var signedMax = max >> 1;
        List<ulong> values = [0, 1, 2, max - 1, max, signedMax, signedMax + 1, signedMax - 1];
        if (width >= 4)
        {
            values.AddRange([int.MaxValue, (ulong)int.MaxValue + 1, uint.MaxValue, 0x7FFF_FFF0]);
        }

        return [.. values.Select(v => v & max).Distinct()];
    }

    /// <summary>The values a varint is set to: small, the 7-bit boundaries, the int, uint, long and ulong limits.</summary>
    public static readonly ulong[] VarintExtremes =
    [
        0, 1, 2, 127, 128, 255, 16383, 16384, int.MaxValue - 1, int.MaxValue, (ulong)int.MaxValue + 1,
        uint.MaxValue, (1UL << 56) - 1, long.MaxValue, (ulong)long.MaxValue + 1, ulong.MaxValue,
    ];

    /// <summary>Flips bit <paramref name="bit"/> (0 is the low bit of byte 0).</summary>
    public static byte[] FlipBit(byte[] input, int bit)
    {
        var output = (byte[])input.Clone();
        output[bit / 8] ^= (byte)(1 << (bit % 8));
        return output;
    }

    /// <summary>Sets byte <paramref name="offset"/> to <paramref name="value"/>.</summary>
    public static byte[] SetByte(byte[] input, int offset, byte value)
    {
        var output = (byte[])input.Clone();
        output[offset] = value;
        return output;
    }

    /// <summary>Keeps the first <paramref name="length"/> bytes.</summary>
    public static byte[] Truncate(byte[] input, int length) => input[..length];

    /// <summary>Appends <paramref name="tail"/>.</summary>
    public static byte[] Extend(byte[] input, ReadOnlySpan<byte> tail) => [.. input, .. tail];

    /// <summary><paramref name="input"/>'s first <paramref name="cut"/> bytes, then <paramref name="other"/> from <paramref name="otherCut"/> on.</summary>
    public static byte[] Splice(byte[] input, int cut, byte[] other, int otherCut) => [.. input.AsSpan(0, cut), .. other.AsSpan(otherCut)];

    /// <summary>Inserts a copy of <paramref name="length"/> bytes at <paramref name="from"/> before byte <paramref name="at"/>.</summary>
    public static byte[] DuplicateChunk(byte[] input, int from, int length, int at)
    {
        var chunk = input.AsSpan(from, length);
        return [.. input.AsSpan(0, at), .. chunk, .. input.AsSpan(at)];
    }

    /// <summary>Removes <paramref name="length"/> bytes at <paramref name="from"/>.</summary>
    public static byte[] RemoveChunk(byte[] input, int from, int length) => [.. input.AsSpan(0, from), .. input.AsSpan(from + length)];

    /// <summary>Writes <paramref name="value"/> as a <paramref name="width"/>-byte integer at <paramref name="offset"/> (clipped at the end).</summary>
    public static byte[] SetInteger(byte[] input, int offset, int width, bool bigEndian, ulong value)
    {
        Span<byte> bytes = stackalloc byte[8];
        if (bigEndian)
        {
            BinaryPrimitives.WriteUInt64BigEndian(bytes, value);
            bytes = bytes[(8 - width)..];
        }
        else
        {
            BinaryPrimitives.WriteUInt64LittleEndian(bytes, value);
            bytes = bytes[..width];
        }

        var output = (byte[])input.Clone();
        var n = Math.Min(width, output.Length - offset);
        bytes[..n].CopyTo(output.AsSpan(offset));
        return output;
    }

    /// <summary>Replaces the varint at <paramref name="offset"/> with <paramref name="encoding"/> (the rest shifts).</summary>
    public static byte[] ReplaceVarint(byte[] input, int offset, ReadOnlySpan<byte> encoding)
    {
        var length = VarintLength(input, offset);
        return [.. input.AsSpan(0, offset), .. encoding, .. input.AsSpan(offset + length)];
    }

    /// <summary>Bytes of the varint at <paramref name="offset"/>: up to its last byte, or to the end of the input.</summary>
    public static int VarintLength(ReadOnlySpan<byte> input, int offset)
    {
        var i = offset;
        while (i < input.Length && i - offset < 10 && (input[i] & 0x80) != 0)
        {
            i++;
        }

        return Math.Min(i + 1, input.Length) - offset;
    }

    /// <summary>The value of the varint at <paramref name="offset"/> (low 64 bits; a cut-off one as far as it goes).</summary>
    public static ulong ReadVarint(ReadOnlySpan<byte> input, int offset)
    {
        ulong value = 0;
        var shift = 0;
        for (var i = offset; i < input.Length && shift < 64; i++, shift += 7)
        {
            value |= (ulong)(input[i] & 0x7F) << shift;
            if ((input[i] & 0x80) == 0)
            {
                break;
            }
        }

        return value;
    }

    /// <summary>The shortest LEB128 encoding of <paramref name="value"/>.</summary>
    public static byte[] EncodeVarint(ulong value)
    {
        var bytes = new List<byte>(10);
        do
        {
            var b = (byte)(value & 0x7F);
            value >>= 7;
            bytes.Add(value == 0 ? b : (byte)(b | 0x80));
        }
        while (value != 0);
        return [.. bytes];
    }

    /// <summary>
    /// Malformed encodings of <paramref name="value"/>: padded past its shortest form, unterminated,
    /// and longer than 64 bits.
    /// </summary>
    public static byte[][] MalformedVarints(ulong value)
    {
        var shortest = EncodeVarint(value);
        byte[] padded = [.. shortest[..^1], (byte)(shortest[^1] | 0x80), 0x00];
        byte[] unterminated = [.. shortest[..^1], (byte)(shortest[^1] | 0x80)];
        byte[] tooLong = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01];
        byte[] bit64 = [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x02];
        return [padded, unterminated, tooLong, bit64];
    }
}
