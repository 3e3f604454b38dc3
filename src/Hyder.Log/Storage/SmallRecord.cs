using System.Buffers.Binary;

namespace Hyder.Log.Storage;

/// <summary>
/// The 32-byte little-endian record of a unit's small files (<c>unit.meta</c>, <c>durable.mark</c>):
/// <code>0 u32 magic  4 u16 version (1)  6 u16 zero  8 i64 first  16 i64 second  24 u32 zero  28 u32 CRC-32C of 0..28</code>
/// </summary>
internal static class SmallRecord
{
    /// <summary>Bytes of a record.</summary>
    public const int Size = 32;

    /// <summary>Writes a record with <paramref name="magic"/> and its two fields into <paramref name="bytes"/> (<see cref="Size"/> bytes).</summary>
    public static void Encode(Span<byte> bytes, uint magic, long first, long second)
    {
        bytes = bytes[..Size];
        bytes.Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, magic);
        BinaryPrimitives.WriteUInt16LittleEndian(bytes[4..], 1);
        BinaryPrimitives.WriteInt64LittleEndian(bytes[8..], first);
        BinaryPrimitives.WriteInt64LittleEndian(bytes[16..], second);
        BinaryPrimitives.WriteUInt32LittleEndian(bytes[28..], Crc32C.Compute(bytes[..28]));
    }

    /// <summary>Reads a record; false if the length, magic, version or checksum is wrong.</summary>
    public static bool TryDecode(ReadOnlySpan<byte> bytes, uint magic, out long first, out long second)
    {
        first = 0;
        second = 0;
        if (bytes.Length != Size
            || BinaryPrimitives.ReadUInt32LittleEndian(bytes) != magic
            || BinaryPrimitives.ReadUInt16LittleEndian(bytes[4..]) != 1
            || BinaryPrimitives.ReadUInt32LittleEndian(bytes[28..]) != Crc32C.Compute(bytes[..28]))
        {
            return false;
        }

        first = BinaryPrimitives.ReadInt64LittleEndian(bytes[8..]);
        second = BinaryPrimitives.ReadInt64LittleEndian(bytes[16..]);
        return true;
    }
}
