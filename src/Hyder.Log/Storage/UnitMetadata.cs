using System.Buffers.Binary;

namespace Hyder.Log.Storage;

/// <summary>
/// The little state of a log unit that is not in its slots: the sealed epoch and the prefix-trim
/// mark. Stored as <c>unit.meta</c>, 32 bytes little-endian:
/// <code>0 u32 magic "HYLM"  4 u16 version  6 u16 zero  8 i64 epoch  16 i64 trim mark  24 u32 zero  28 u32 CRC-32C of 0..28</code>
/// Replaced atomically (write a temporary file, flush it, rename it over, flush the directory).
/// </summary>
/// <param name="Epoch">The epoch the unit is sealed at; requests of older epochs are rejected.</param>
/// <param name="TrimMark">Every address below it is trimmed.</param>
internal readonly record struct UnitMetadata(long Epoch, long TrimMark)
{
    /// <summary>The file name inside a unit's data directory.</summary>
    public const string FileName = "unit.meta";

    private const int Size = 32;
    private const uint Magic = 0x4D4C5948;

    /// <summary>Loads the metadata of <paramref name="directory"/>, or zeros for a new unit.</summary>
    public static UnitMetadata Load(string directory)
    {
        var path = Path.Combine(directory, FileName);
        if (!File.Exists(path))
        {
            return default;
        }

        var bytes = File.ReadAllBytes(path);
        if (bytes.Length != Size
            || BinaryPrimitives.ReadUInt32LittleEndian(bytes) != Magic
            || BinaryPrimitives.ReadUInt16LittleEndian(bytes.AsSpan(4)) != 1
            || BinaryPrimitives.ReadUInt32LittleEndian(bytes.AsSpan(28)) != Crc32C.Compute(bytes.AsSpan(0, 28)))
        {
            throw new LogCorruptionException($"The unit metadata file '{path}' is damaged; the unit cannot know its seal.");
        }

        return new UnitMetadata(
            BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(8)),
            BinaryPrimitives.ReadInt64LittleEndian(bytes.AsSpan(16)));
    }

    /// <summary>Durably replaces the metadata of <paramref name="directory"/>.</summary>
    public void Save(string directory)
    {
        Span<byte> bytes = stackalloc byte[Size];
        bytes.Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(bytes, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(bytes[4..], 1);
        BinaryPrimitives.WriteInt64LittleEndian(bytes[8..], Epoch);
        BinaryPrimitives.WriteInt64LittleEndian(bytes[16..], TrimMark);
        BinaryPrimitives.WriteUInt32LittleEndian(bytes[28..], Crc32C.Compute(bytes[..28]));
        var path = Path.Combine(directory, FileName);
        var temporary = path + ".tmp";
        using (var handle = File.OpenHandle(temporary, FileMode.Create, FileAccess.Write))
        {
            RandomAccess.Write(handle, bytes, 0);
            RandomAccess.FlushToDisk(handle);
        }

        File.Move(temporary, path, overwrite: true);
        DirectorySync.Flush(directory);
    }
}
