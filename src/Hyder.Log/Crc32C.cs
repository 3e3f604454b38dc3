using System.Buffers.Binary;
using System.Numerics;

namespace Hyder.Log;

/// <summary>CRC-32C (Castagnoli) over spans, from the hardware instruction behind <see cref="BitOperations.Crc32C(uint, ulong)"/>.</summary>
internal static class Crc32C
{
    /// <summary>Continues <paramref name="crc"/> over <paramref name="data"/>; start with 0.</summary>
    public static uint Append(uint crc, ReadOnlySpan<byte> data)
    {
        var state = ~crc;
        while (data.Length >= 8)
        {
            state = BitOperations.Crc32C(state, BinaryPrimitives.ReadUInt64LittleEndian(data));
            data = data[8..];
        }

        foreach (var b in data)
        {
            state = BitOperations.Crc32C(state, b);
        }

        return ~state;
    }

    /// <summary>The CRC-32C of <paramref name="data"/>.</summary>
    public static uint Compute(ReadOnlySpan<byte> data) => Append(0, data);
}
