using System.Buffers.Binary;
using Hyder.Fuzz.Engine;
using Hyder.Log;
using Hyder.Log.Storage;
using Hyder.Log.Units;

namespace Hyder.Fuzz.Targets;

/// <summary>A data directory with one file to mutate and the others as the unit wrote them.</summary>
/// <param name="FileName">The file the seed's bytes are.</param>
/// <param name="Files">Every file of the directory, as written.</param>
internal sealed record DirectorySeed(string FileName, IReadOnlyDictionary<string, byte[]> Files);

/// <summary>
/// A log unit's data directory on disk, one file damaged: the last segment (a torn or corrupt
/// tail), an earlier one, <c>unit.meta</c> or <c>durable.mark</c>. Runs the unit's recovery
/// (<see cref="LogUnit.Open"/>: FileSlotStore.Recover, SegmentFile.HeaderMatches, SlotHeader.Check,
/// UnitMetadata.Load, DurableMark.Load) and then
/// reads every address it may hold. The directory lives on tmpfs when there is one.
/// </summary>
internal sealed class SegmentFileTarget : FuzzTarget
{
    private const int BlockSize = 64;
    private const int SlotsPerSegment = 8;
    private const int SlotSize = SlotHeader.Size + BlockSize;
    private readonly string _directory = Path.Combine(Scratch, $"hyder-fuzz-{Environment.ProcessId}-{Guid.NewGuid():N}");
    private readonly byte[] _read = new byte[BlockSize];

    public override string Name => "segment-file";

    public override string Description => "LogUnit recovery of a data directory: FileSlotStore.Recover, SegmentFile.HeaderMatches, SlotHeader.Check, UnitMetadata.Load, DurableMark.Load; then reads";

    // LogCorruptionException: damage recovery cannot work around; InvalidOperationException: a
    // segment written with another block or segment size (SegmentFile.HeaderMatches).
    public override IReadOnlyList<Type> Documented { get; } = [typeof(LogCorruptionException), typeof(InvalidOperationException)];

    public override bool HasFixup => true;

    public override long AllocationBound(int inputLength) => (1L << 20) + (256L * inputLength);

    /// <summary>/dev/shm when present: recovery's fsyncs cost nothing there.</summary>
    private static string Scratch => Directory.Exists("/dev/shm") ? "/dev/shm" : Path.GetTempPath();

    public override void Execute(byte[] input, Seed seed)
    {
        var context = (DirectorySeed)seed.Context!;
        Directory.CreateDirectory(_directory);
        foreach (var file in Directory.EnumerateFiles(_directory))
        {
            File.Delete(file);
        }

        foreach (var (name, bytes) in context.Files)
        {
            File.WriteAllBytes(Path.Combine(_directory, name), name == context.FileName ? input : bytes);
        }

        using var unit = LogUnit.Open(Options(_directory));
        var addresses = Enumerable.Range(0, 2 * SlotsPerSegment + 2).Select(a => (long)a).Concat(unit.Recovery.CorruptAddresses);
        foreach (var address in addresses)
        {
            unit.ReadAsync(long.MaxValue, address, _read).AsTask().GetAwaiter().GetResult();
        }
    }

    /// <summary>Recomputes the checksums of a segment's header and of every whole slot, or of unit.meta or durable.mark.</summary>
    public override void Fixup(byte[] input, Seed seed)
    {
        if (((DirectorySeed)seed.Context!).FileName is UnitMetadata.FileName or DurableMark.FileName)
        {
            if (input.Length >= 32)
            {
                BinaryPrimitives.WriteUInt32LittleEndian(input.AsSpan(28), Crc32C.Compute(input.AsSpan(0, 28)));
            }

            return;
        }

        if (input.Length >= SegmentFileHeaderSize)
        {
            BinaryPrimitives.WriteUInt32LittleEndian(input.AsSpan(60), Crc32C.Compute(input.AsSpan(0, 60)));
        }

        for (var at = SegmentFileHeaderSize; at + SlotSize <= input.Length; at += SlotSize)
        {
            var slot = input.AsSpan(at, SlotSize);
            BinaryPrimitives.WriteUInt32LittleEndian(slot[24..], Crc32C.Compute(slot[..24]));
            BinaryPrimitives.WriteUInt32LittleEndian(slot[28..], Crc32C.Compute(slot[SlotHeader.Size..]));
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        var directories = new List<(string Name, Dictionary<string, byte[]> Files)>
        {
            ("one partial segment", Write(5, seal: false)),
            ("a full segment and a partial one", Write(12, seal: true)),
            ("two full segments", Write(16, seal: true)),
        };
        foreach (var (name, files) in directories)
        {
            foreach (var file in files.Keys.Order(StringComparer.Ordinal))
            {
                var fields = file switch
                {
                    UnitMetadata.FileName => MetadataFields,
                    DurableMark.FileName => MarkFields,
                    _ => SegmentFields(files[file].Length),
                };
                yield return new Seed($"{name}: {file}", files[file], fields, new DirectorySeed(file, files));
            }
        }
    }

    protected override void Dispose(bool disposing)
    {
        if (Directory.Exists(_directory))
        {
            Directory.Delete(_directory, recursive: true);
        }

        base.Dispose(disposing);
    }

    private const int SegmentFileHeaderSize = 64;

    private static readonly Field[] MetadataFields =
    [
        new(4, 2, FieldKind.UInt, "version"),
        new(8, 8, FieldKind.Int, "epoch"),
        new(16, 8, FieldKind.Int, "trim mark"),
    ];

    private static readonly Field[] MarkFields =
    [
        new(4, 2, FieldKind.UInt, "version"),
        new(8, 8, FieldKind.Int, "durable slots"),
        new(16, 8, FieldKind.Int, "highest durable address"),
    ];

    private static LogUnitOptions Options(string directory, FsyncPolicy fsync = FsyncPolicy.None) =>
        new() { DataDirectory = directory, BlockSize = BlockSize, SlotsPerSegment = SlotsPerSegment, Fsync = fsync };

    private static Field[] SegmentFields(int length)
    {
        var fields = new List<Field>
        {
            new(4, 2, FieldKind.UInt, "segment version"),
            new(8, 4, FieldKind.UInt, "block size"),
            new(12, 4, FieldKind.UInt, "slots per segment"),
            new(16, 8, FieldKind.Int, "segment index"),
        };
        for (var at = SegmentFileHeaderSize; at + SlotSize <= length; at += SlotSize)
        {
            fields.Add(new(at + 6, 1, FieldKind.UInt, "slot kind"));
            fields.Add(new(at + 8, 8, FieldKind.Int, "slot address"));
            fields.Add(new(at + 16, 4, FieldKind.UInt, "slot length"));
        }

        return [.. fields];
    }

    /// <summary>A unit's directory after <paramref name="slots"/> appends (data of every length, fills, trims), read back as bytes.</summary>
    private static Dictionary<string, byte[]> Write(int slots, bool seal)
    {
        var directory = Path.Combine(Scratch, $"hyder-fuzz-corpus-{Environment.ProcessId}-{Guid.NewGuid():N}");
        try
        {
            // Group commit, so the directory has its durable mark.
            using (var unit = LogUnit.Open(Options(directory, FsyncPolicy.GroupCommit)))
            {
                for (var a = 0; a < slots; a++)
                {
                    var reply = (a % 5) switch
                    {
                        3 => unit.FillAsync(0, a),
                        4 => unit.TrimAsync(0, a - 2),
                        _ => unit.WriteAsync(0, a, Enumerable.Range(0, 1 + (a * 13 % BlockSize)).Select(i => (byte)(i + a)).ToArray()),
                    };
                    reply.AsTask().GetAwaiter().GetResult();
                }

                if (seal)
                {
                    unit.SealAsync(2).AsTask().GetAwaiter().GetResult();
                    unit.PrefixTrimAsync(2, 1).AsTask().GetAwaiter().GetResult();
                }
            }

            return Directory.EnumerateFiles(directory).ToDictionary(p => Path.GetFileName(p), File.ReadAllBytes, StringComparer.Ordinal);
        }
        finally
        {
            Directory.Delete(directory, recursive: true);
        }
    }
}
