using Hyder.Log.Storage;

namespace Hyder.Log.Units;

/// <summary>How a log unit stores its blocks.</summary>
public sealed class LogUnitOptions
{
    /// <summary>The default block size: 8 KiB, the intention block of Hyder II.</summary>
    public const int DefaultBlockSize = 8192;

    /// <summary>The largest block a write may carry.</summary>
    public int BlockSize { get; set; } = DefaultBlockSize;

    /// <summary>The data directory; null keeps the blocks in memory.</summary>
    public string? DataDirectory { get; set; }

    /// <summary>Slots per segment file (8192 slots of 8 KiB: 64 MiB files).</summary>
    public int SlotsPerSegment { get; set; } = 8192;

    /// <summary>When writes become durable; group commit by default.</summary>
    public FsyncPolicy Fsync { get; set; } = FsyncPolicy.GroupCommit;

    /// <summary>Checks the values.</summary>
    public void Validate()
    {
        if (BlockSize is < 64 or > (1 << 20))
        {
            throw new ArgumentOutOfRangeException(nameof(BlockSize), BlockSize, "Block size must be between 64 bytes and 1 MiB.");
        }

        if (SlotsPerSegment < 2)
        {
            throw new ArgumentOutOfRangeException(nameof(SlotsPerSegment), SlotsPerSegment, "A segment holds at least two slots.");
        }
    }
}
