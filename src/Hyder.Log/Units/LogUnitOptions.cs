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

    /// <summary>
    /// The <see cref="CommitDelay"/> of a log in a transaction server's process (the embedded
    /// log): 200 µs on Linux and macOS, none on Windows (whose sleeps are whole milliseconds of
    /// the system timer). A log host's units default to none.
    /// </summary>
    public static readonly TimeSpan EmbeddedCommitDelay = OperatingSystem.IsWindows() ? TimeSpan.Zero : TimeSpan.FromMicroseconds(200);

    /// <summary>The default <see cref="CommitSiblings"/>.</summary>
    public const int DefaultCommitSiblings = 5;

    /// <summary>The longest <see cref="CommitDelay"/>, in microseconds (the unit of every <c>--commit-delay-us</c>).</summary>
    public const int MaxCommitDelayMicroseconds = 100_000;

    /// <summary>The error for a <c>--commit-delay-us</c> value outside 0..<see cref="MaxCommitDelayMicroseconds"/>; null when it is in range.</summary>
    public static string? CommitDelayMicrosecondsError(int microseconds) =>
        microseconds is < 0 or > MaxCommitDelayMicroseconds ? $"--commit-delay-us {microseconds} is outside 0..{MaxCommitDelayMicroseconds} microseconds." : null;

    /// <summary>The longest <see cref="CommitDelay"/>.</summary>
    public static readonly TimeSpan MaxCommitDelay = TimeSpan.FromMicroseconds(MaxCommitDelayMicroseconds);

    /// <summary>
    /// How long a group-commit flush waits for more writes before its fsync, when the flush
    /// before it covered at least <see cref="CommitSiblings"/> slots and work waits in the
    /// process's thread pool (PostgreSQL's <c>commit_delay</c> and <c>commit_siblings</c>, with a
    /// CPU check): under many concurrent writers each fsync then covers more of them, and a lone
    /// writer never waits. Zero (the default) turns it off; the embedded log sets
    /// <see cref="EmbeddedCommitDelay"/>.
    /// </summary>
    public TimeSpan CommitDelay { get; set; }

    /// <summary>How many slots the previous flush must have covered for a flush to wait <see cref="CommitDelay"/>.</summary>
    public int CommitSiblings { get; set; } = DefaultCommitSiblings;

    /// <summary>The default <see cref="CachedSlots"/>: 1,024 slots, 8 MiB of 8 KiB blocks.</summary>
    public const int DefaultCachedSlots = 1024;

    /// <summary>
    /// How many of the newest durable slots a unit leaves in the operating system's page cache.
    /// After each group-commit fsync the unit tells the kernel (Linux <c>posix_fadvise</c>,
    /// <c>POSIX_FADV_DONTNEED</c>) that it no longer needs the pages of the slots further behind,
    /// so that the next writes reuse those pages rather than fresh memory: on the project's
    /// virtual machine, appends into an ever-growing page cache cost the kernel 11-18 % of the
    /// embedded main job's CPU, and a quarter of its throughput (docs/log.md, "The page cache").
    /// A reader further behind reads those slots from the disk. Zero leaves
    /// the page cache to the kernel; so does <see cref="FsyncPolicy.None"/> (the pages are still
    /// dirty) and every system but Linux.
    /// </summary>
    public int CachedSlots { get; set; } = DefaultCachedSlots;

    /// <summary>Whether a unit with these settings drops pages (<see cref="CachedSlots"/>): group commit, slots to keep, Linux.</summary>
    public static bool DropsPages(FsyncPolicy fsync, int cachedSlots) =>
        fsync == FsyncPolicy.GroupCommit && cachedSlots > 0 && OperatingSystem.IsLinux();

    /// <summary>The error for a <c>--page-cache-slots</c> value below 0; null when it is valid.</summary>
    public static string? CachedSlotsError(int slots) =>
        slots < 0 ? $"--page-cache-slots {slots} is negative (0 leaves the page cache to the kernel)." : null;

    /// <summary>Checks the values.</summary>
    public void Validate()
    {
        if (CommitDelay < TimeSpan.Zero || CommitDelay > MaxCommitDelay)
        {
            throw new ArgumentOutOfRangeException(nameof(CommitDelay), CommitDelay, $"The commit delay must be between 0 and {MaxCommitDelay.TotalMilliseconds} ms.");
        }

        if (CachedSlots < 0)
        {
            throw new ArgumentOutOfRangeException(nameof(CachedSlots), CachedSlots, "Cached slots must be 0 (leave the page cache to the kernel) or more.");
        }

        if (CommitSiblings < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(CommitSiblings), CommitSiblings, "Commit siblings must be at least 1.");
        }

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
