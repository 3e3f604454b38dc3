namespace Hyder.Log;

/// <summary>
/// One totally ordered, write-once log of opaque blocks: what a transaction server sees, whether
/// the log runs in this process or on a cluster of log units. The log knows nothing of trees.
/// </summary>
public interface ISharedLog : IAsyncDisposable
{
    /// <summary>The largest block the log stores (8 KiB by default).</summary>
    int BlockSize { get; }

    /// <summary>
    /// Appends <paramref name="block"/> (1 to <see cref="BlockSize"/> bytes) and returns its address
    /// once every replica of its chain stores it durably.
    /// </summary>
    /// <remarks>
    /// Nothing the log stores or sends comes from <paramref name="block"/> after the returned task
    /// completes, successfully or not: a log unit copies it into its slot before it answers, and a
    /// remote unit's call completes only once its frame was answered or its connection was shut
    /// down for sending. The caller may reuse or pool the buffer from then on.
    /// </remarks>
    ValueTask<long> AppendAsync(ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default);

    /// <summary>
    /// Reads the entry at <paramref name="address"/> into <paramref name="destination"/> (at least
    /// <see cref="BlockSize"/> bytes). Completes a half-written chain. Throws
    /// <see cref="SharedLogException"/> with <see cref="LogStatus.Trimmed"/> for trimmed space.
    /// </summary>
    ValueTask<LogRead> ReadAsync(long address, Memory<byte> destination, CancellationToken cancellationToken = default);

    /// <summary>
    /// Fills a hole with junk so readers can skip it. If a writer got there first the block stays,
    /// and the answer says so (<see cref="LogEntryKind.Data"/>).
    /// </summary>
    ValueTask<LogEntryKind> FillAsync(long address, CancellationToken cancellationToken = default);

    /// <summary>Trims one address on every replica; reading it afterwards is an error.</summary>
    ValueTask TrimAsync(long address, CancellationToken cancellationToken = default);

    /// <summary>Trims every address below <paramref name="before"/> and frees their space.</summary>
    ValueTask PrefixTrimAsync(long before, CancellationToken cancellationToken = default);

    /// <summary>The next address the log will hand out (one past the highest issued).</summary>
    ValueTask<long> TailAsync(CancellationToken cancellationToken = default);

    /// <summary>
    /// Yields every data block from <paramref name="from"/> on, in address order, waiting for new
    /// appends and filling holes left by crashed writers after the configured wait. The record's
    /// memory is valid until the enumerator moves on.
    /// </summary>
    IAsyncEnumerable<LogRecord> SubscribeAsync(long from, CancellationToken cancellationToken = default);
}

/// <summary>What an address of the log holds.</summary>
public enum LogEntryKind : byte
{
    /// <summary>Nothing yet: a hole or the unwritten tail.</summary>
    Unwritten = 0,

    /// <summary>A block a client appended.</summary>
    Data = 1,

    /// <summary>Junk written by a hole fill.</summary>
    Filled = 2,
}

/// <summary>The outcome of a read: what the address holds and, for data, the block's length.</summary>
/// <param name="Kind">What the address holds.</param>
/// <param name="Length">Bytes of the block written to the destination (data only).</param>
public readonly record struct LogRead(LogEntryKind Kind, int Length);

/// <summary>One data block of a subscription.</summary>
/// <param name="Address">The block's log address.</param>
/// <param name="Block">The block; valid until the subscription moves on.</param>
public readonly record struct LogRecord(long Address, ReadOnlyMemory<byte> Block);
