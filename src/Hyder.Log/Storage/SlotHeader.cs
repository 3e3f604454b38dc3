using System.Buffers.Binary;

namespace Hyder.Log.Storage;

/// <summary>What a slot of a segment file records.</summary>
internal enum SlotKind : byte
{
    /// <summary>Not a slot kind; an index entry for a slot whose body failed its checksum.</summary>
    Corrupt = 0,

    /// <summary>A client's block.</summary>
    Data = 1,

    /// <summary>A hole fill (junk).</summary>
    Fill = 2,

    /// <summary>A point trim of an address.</summary>
    Trim = 3,
}

/// <summary>
/// The 32-byte header in front of every fixed-size slot of a segment file, little-endian:
/// <code>
///  0 u32 magic "HYLB"   4 u16 version   6 u8 kind   7 u8 zero
///  8 i64 address       16 u32 length   20 u32 zero
/// 24 u32 CRC-32C of bytes 0..24        28 u32 CRC-32C of the whole body (block size bytes, zero padded)
/// </code>
/// The header checksum says whether the address can be trusted even when the body is damaged;
/// the body checksum covers the padding too, so a flipped bit anywhere in the slot is detected.
/// </summary>
internal static class SlotHeader
{
    /// <summary>Bytes of the header.</summary>
    public const int Size = 32;

    /// <summary>"HYLB" read as a little-endian u32.</summary>
    public const uint Magic = 0x424C5948;

    /// <summary>The slot format version written and accepted.</summary>
    public const ushort Version = 1;

    /// <summary>
    /// Writes a whole slot (header and zero-padded body) into <paramref name="slot"/>, which is
    /// exactly <see cref="Size"/> + block size bytes.
    /// </summary>
    public static void Encode(Span<byte> slot, SlotKind kind, long address, ReadOnlySpan<byte> payload)
    {
        var body = slot[Size..];
        payload.CopyTo(body);
        body[payload.Length..].Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(slot, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(slot[4..], Version);
        slot[6] = (byte)kind;
        slot[7] = 0;
        BinaryPrimitives.WriteInt64LittleEndian(slot[8..], address);
        BinaryPrimitives.WriteUInt32LittleEndian(slot[16..], (uint)payload.Length);
        BinaryPrimitives.WriteUInt32LittleEndian(slot[20..], 0);
        BinaryPrimitives.WriteUInt32LittleEndian(slot[24..], Crc32C.Compute(slot[..24]));
        BinaryPrimitives.WriteUInt32LittleEndian(slot[28..], Crc32C.Compute(body));
    }

    /// <summary>
    /// Checks a slot read back from disk. <see cref="SlotCheck.HeaderOk"/> means the address and
    /// kind can be trusted but the body cannot.
    /// </summary>
    public static SlotCheck Check(ReadOnlySpan<byte> slot, int blockSize, out SlotKind kind, out long address, out int length)
    {
        kind = SlotKind.Corrupt;
        address = -1;
        length = 0;
        if (BinaryPrimitives.ReadUInt32LittleEndian(slot) != Magic
            || BinaryPrimitives.ReadUInt32LittleEndian(slot[24..]) != Crc32C.Compute(slot[..24]))
        {
            return SlotCheck.Bad;
        }

        var k = (SlotKind)slot[6];
        var a = BinaryPrimitives.ReadInt64LittleEndian(slot[8..]);
        var n = BinaryPrimitives.ReadUInt32LittleEndian(slot[16..]);
        if (BinaryPrimitives.ReadUInt16LittleEndian(slot[4..]) != Version
            || k is < SlotKind.Data or > SlotKind.Trim
            || !LogAddress.IsValid(a)
            || n > (uint)blockSize)
        {
            return SlotCheck.Bad;
        }

        kind = k;
        address = a;
        length = (int)n;
        var bodyOk = BinaryPrimitives.ReadUInt32LittleEndian(slot[28..]) == Crc32C.Compute(slot.Slice(Size, blockSize));
        return bodyOk ? SlotCheck.Ok : SlotCheck.HeaderOk;
    }
}

/// <summary>The verdict on a slot read back from disk.</summary>
internal enum SlotCheck
{
    /// <summary>Header and body are intact.</summary>
    Ok,

    /// <summary>The header is intact, the body failed its checksum.</summary>
    HeaderOk,

    /// <summary>Nothing in the slot can be trusted (torn, zeroed or damaged header).</summary>
    Bad,
}
