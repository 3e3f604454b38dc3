using System.Buffers.Binary;
using Microsoft.Win32.SafeHandles;

namespace Hyder.Log.Storage;

/// <summary>
/// One segment file, <c>segment-NNNNNNNN.log</c>: a 64-byte header, then fixed-size slots.
/// Header, little-endian:
/// <code>0 u32 magic "HYLS"  4 u16 version  6 u16 zero  8 u32 block size  12 u32 slots per segment
/// 16 i64 segment index  24..60 zero  60 u32 CRC-32C of 0..60</code>
/// </summary>
internal sealed class SegmentFile : IDisposable
{
    /// <summary>Bytes of the segment header.</summary>
    public const int HeaderSize = 64;

    private const uint Magic = 0x534C5948;

    private SegmentFile(long index, string path, SafeFileHandle handle)
    {
        Index = index;
        Path = path;
        Handle = handle;
    }

    /// <summary>The segment's number; its first location is Index × slots per segment.</summary>
    public long Index { get; }

    /// <summary>The file's path.</summary>
    public string Path { get; }

    /// <summary>The open read-write handle.</summary>
    public SafeFileHandle Handle { get; }

    /// <summary>Slots written so far.</summary>
    public int Count { get; set; }

    /// <summary>The highest log address in the segment, -1 if none.</summary>
    public long MaxAddress { get; set; } = -1;

    /// <summary>The file name of segment <paramref name="index"/>.</summary>
    public static string NameOf(long index) => $"segment-{index:D8}.log";

    /// <summary>Parses a segment file name; false for other files.</summary>
    public static bool TryParseName(string fileName, out long index)
    {
        index = -1;
        return fileName.StartsWith("segment-", StringComparison.Ordinal)
            && fileName.EndsWith(".log", StringComparison.Ordinal)
            && long.TryParse(fileName.AsSpan(8, fileName.Length - 12), out index);
    }

    /// <summary>Creates a new, empty segment with its header, durably.</summary>
    public static SegmentFile Create(string directory, long index, int blockSize, int slotsPerSegment)
    {
        var path = System.IO.Path.Combine(directory, NameOf(index));
        var handle = File.OpenHandle(path, FileMode.Create, FileAccess.ReadWrite, FileShare.Read);
        Span<byte> header = stackalloc byte[HeaderSize];
        WriteHeader(header, index, blockSize, slotsPerSegment);
        RandomAccess.Write(handle, header, 0);
        RandomAccess.FlushToDisk(handle);
        DirectorySync.Flush(directory);
        return new SegmentFile(index, path, handle);
    }

    /// <summary>Opens an existing segment; the caller checks its header.</summary>
    public static SegmentFile Open(string path, long index) =>
        new(index, path, File.OpenHandle(path, FileMode.Open, FileAccess.ReadWrite, FileShare.Read));

    /// <summary>Whether the header is intact and matches the configuration.</summary>
    public bool HeaderMatches(int blockSize, int slotsPerSegment, out string problem)
    {
        Span<byte> header = stackalloc byte[HeaderSize];
        if (RandomAccess.Read(Handle, header, 0) != HeaderSize)
        {
            problem = "header is truncated";
            return false;
        }

        if (BinaryPrimitives.ReadUInt32LittleEndian(header) != Magic
            || BinaryPrimitives.ReadUInt32LittleEndian(header[60..]) != Crc32C.Compute(header[..60]))
        {
            problem = "header checksum or magic is wrong";
            return false;
        }

        if (BinaryPrimitives.ReadUInt32LittleEndian(header[8..]) != (uint)blockSize
            || BinaryPrimitives.ReadUInt32LittleEndian(header[12..]) != (uint)slotsPerSegment
            || BinaryPrimitives.ReadInt64LittleEndian(header[16..]) != Index)
        {
            throw new InvalidOperationException(
                $"Segment '{Path}' was written with another block size or segment size than this unit is configured with.");
        }

        problem = "";
        return true;
    }

    /// <summary>Rewrites the header of a segment whose creation was torn.</summary>
    public void ResetHeader(int blockSize, int slotsPerSegment)
    {
        Span<byte> header = stackalloc byte[HeaderSize];
        WriteHeader(header, Index, blockSize, slotsPerSegment);
        RandomAccess.SetLength(Handle, 0);
        RandomAccess.Write(Handle, header, 0);
        RandomAccess.FlushToDisk(Handle);
    }

    private static void WriteHeader(Span<byte> header, long index, int blockSize, int slotsPerSegment)
    {
        header.Clear();
        BinaryPrimitives.WriteUInt32LittleEndian(header, Magic);
        BinaryPrimitives.WriteUInt16LittleEndian(header[4..], 1);
        BinaryPrimitives.WriteUInt32LittleEndian(header[8..], (uint)blockSize);
        BinaryPrimitives.WriteUInt32LittleEndian(header[12..], (uint)slotsPerSegment);
        BinaryPrimitives.WriteInt64LittleEndian(header[16..], index);
        BinaryPrimitives.WriteUInt32LittleEndian(header[60..], Crc32C.Compute(header[..60]));
    }

    /// <inheritdoc />
    public void Dispose() => Handle.Dispose();
}
