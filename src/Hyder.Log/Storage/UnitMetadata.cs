namespace Hyder.Log.Storage;

/// <summary>
/// The little state of a log unit that is not in its slots: the sealed epoch and the prefix-trim
/// mark. Stored as <c>unit.meta</c>, a <see cref="SmallRecord"/> (magic "HYLM"; epoch, trim mark).
/// Replaced atomically (write a temporary file, flush it, rename it over, flush the directory).
/// </summary>
/// <param name="Epoch">The epoch the unit is sealed at; requests of older epochs are rejected.</param>
/// <param name="TrimMark">Every address below it is trimmed.</param>
internal readonly record struct UnitMetadata(long Epoch, long TrimMark)
{
    /// <summary>The file name inside a unit's data directory.</summary>
    public const string FileName = "unit.meta";

    private const uint Magic = 0x4D4C5948;

    /// <summary>Loads the metadata of <paramref name="directory"/>, or zeros for a new unit.</summary>
    public static UnitMetadata Load(string directory)
    {
        var path = Path.Combine(directory, FileName);
        if (!File.Exists(path))
        {
            return default;
        }

        if (!SmallRecord.TryDecode(File.ReadAllBytes(path), Magic, out var epoch, out var trimMark))
        {
            throw new LogCorruptionException($"The unit metadata file '{path}' is damaged; the unit cannot know its seal.");
        }

        return new UnitMetadata(epoch, trimMark);
    }

    /// <summary>Durably replaces the metadata of <paramref name="directory"/>.</summary>
    public void Save(string directory)
    {
        Span<byte> bytes = stackalloc byte[SmallRecord.Size];
        SmallRecord.Encode(bytes, Magic, Epoch, TrimMark);
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
