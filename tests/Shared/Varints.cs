namespace Hyder.Testing;

/// <summary>
/// Unsigned LEB128 varints, as the block formats write them, for tests that take a well-formed
/// block apart and write a hostile one (the engine's own reader and writer are internal to it).
/// </summary>
public static class Varints
{
    /// <summary>Reads the varint at <paramref name="at"/> and moves past it.</summary>
    public static ulong Read(ReadOnlySpan<byte> span, ref int at)
    {
        ulong value = 0;
        for (var shift = 0; ; shift += 7)
        {
            var b = span[at++];
            value |= (ulong)(b & 0x7F) << shift;
            if (b < 0x80)
            {
                return value;
            }
        }
    }

    /// <summary>Appends <paramref name="value"/> to <paramref name="block"/>.</summary>
    public static void Write(List<byte> block, ulong value)
    {
        while (value >= 0x80)
        {
            block.Add((byte)(value | 0x80));
            value >>= 7;
        }

        block.Add((byte)value);
    }
}
