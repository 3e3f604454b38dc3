using Microsoft.Win32.SafeHandles;

namespace Hyder.Log.Storage;

/// <summary>
/// How far a unit's fsyncs reached: every slot below <see cref="Slots"/> was durable, and no durable
/// slot holds an address above <see cref="Highest"/>. Recovery needs it to tell a torn write (after
/// the mark: never acknowledged, cut) from a flipped bit in a durable slot (before it: kept as
/// corrupt, its address still counted by the seal). Stored as <c>durable.mark</c>, a
/// <see cref="SmallRecord"/> (magic "HYLD"; slots, highest address), overwritten in place after
/// each group fsync and flushed before that fsync's writers are answered.
/// </summary>
/// <param name="Slots">Slots (locations) made durable.</param>
/// <param name="Highest">The highest log address among them; -1 if none.</param>
internal readonly record struct DurableMark(long Slots, long Highest)
{
    /// <summary>The file name inside a unit's data directory.</summary>
    public const string FileName = "durable.mark";

    private const uint Magic = 0x444C5948;

    /// <summary>The mark of a unit that has made nothing durable.</summary>
    public static DurableMark None { get; } = new(0, -1);

    /// <summary>
    /// Loads the mark of <paramref name="directory"/>: <see cref="None"/> for a unit that never
    /// recorded one (a new unit, or one written before marks), null if the file is damaged.
    /// </summary>
    public static DurableMark? Load(string directory)
    {
        var path = Path.Combine(directory, FileName);
        if (!File.Exists(path))
        {
            return None;
        }

        return SmallRecord.TryDecode(File.ReadAllBytes(path), Magic, out var slots, out var highest) && slots >= 0 && highest >= -1
            ? new DurableMark(slots, highest)
            : null;
    }

    /// <summary>
    /// Opens the mark file of <paramref name="directory"/> for <see cref="Write"/>, creating it
    /// (durably, with its directory entry) when it is missing or damaged.
    /// </summary>
    public static SafeFileHandle OpenForWriting(string directory, DurableMark current)
    {
        var path = Path.Combine(directory, FileName);
        var existed = File.Exists(path);
        var handle = File.OpenHandle(path, FileMode.OpenOrCreate, FileAccess.Write);

        // A damaged file may have another length; the record is exactly one.
        RandomAccess.SetLength(handle, SmallRecord.Size);
        current.Write(handle);
        if (!existed)
        {
            DirectorySync.Flush(directory);
        }

        return handle;
    }

    /// <summary>Overwrites the mark in place and flushes it (32 bytes, one sector).</summary>
    public void Write(SafeFileHandle handle)
    {
        Span<byte> bytes = stackalloc byte[SmallRecord.Size];
        SmallRecord.Encode(bytes, Magic, Slots, Highest);
        RandomAccess.Write(handle, bytes, 0);
        RandomAccess.FlushToDisk(handle);
    }

    /// <summary>
    /// How many slots of the last run recovery keeps: through the last intact one, and through
    /// every durable one even when damaged. Slots after that were never durable, so never
    /// acknowledged: a torn tail, cut.
    /// </summary>
    public long Keep(long lastIntact) => Math.Max(lastIntact + 1, Slots);
}
