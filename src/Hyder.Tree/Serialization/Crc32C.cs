using System.Buffers.Binary;
using System.Numerics;

namespace Hyder.Tree.Serialization;

/// <summary>
/// CRC-32C (Castagnoli) over spans through <see cref="BitOperations.Crc32C(uint, ulong)"/>, which
/// uses the CPU instruction where there is one. Hyder.Tree keeps its own copy: it must not depend
/// on Hyder.Log.
/// </summary>
internal static class Crc32C
{
    /// <summary>The CRC-32C of <paramref name="data"/> (check value of "123456789": 0xE3069283).</summary>
    public static uint Compute(ReadOnlySpan<byte> data) => Append(0, data);

    /// <summary>The CRC-32C of the bytes <paramref name="crc"/> covers followed by <paramref name="data"/> (<c>Append(0, d)</c> is <c>Compute(d)</c>).</summary>
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
}
