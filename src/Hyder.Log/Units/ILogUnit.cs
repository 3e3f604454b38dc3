namespace Hyder.Log.Units;

/// <summary>
/// One write-once log unit, local or remote. Every request carries the caller's epoch; a unit
/// sealed at a newer epoch answers <see cref="LogStatus.StaleEpoch"/> with its epoch in
/// <see cref="UnitReply.Value"/>.
/// </summary>
public interface ILogUnit
{
    /// <summary>Stores <paramref name="block"/> at <paramref name="address"/> once; a second write answers <see cref="LogStatus.Written"/>.</summary>
    ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default);

    /// <summary>
    /// Reads the block at <paramref name="address"/> into <paramref name="destination"/> (block size
    /// bytes); <see cref="LogStatus.Ok"/> with the length in <see cref="UnitReply.Value"/>, or
    /// <see cref="LogStatus.Unwritten"/>, <see cref="LogStatus.Filled"/>, <see cref="LogStatus.Trimmed"/>, <see cref="LogStatus.Corrupt"/>.
    /// </summary>
    ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default);

    /// <summary>Marks a hole as junk; <see cref="LogStatus.Written"/> if a block is there.</summary>
    ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default);

    /// <summary>Trims one address.</summary>
    ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default);

    /// <summary>Trims every address below <paramref name="before"/> and frees their space.</summary>
    ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default);

    /// <summary>
    /// Rejects every later request of an epoch older than <paramref name="epoch"/>; answers the
    /// highest address written (-1 if none) in <see cref="UnitReply.Value"/>.
    /// </summary>
    ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default);

    /// <summary>The highest address written (-1 if none) without sealing.</summary>
    ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default);
}

/// <summary>A log unit's answer.</summary>
/// <param name="Status">The outcome.</param>
/// <param name="Value">The block length for a read, the highest address for a seal, the unit's epoch for <see cref="LogStatus.StaleEpoch"/>.</param>
public readonly record struct UnitReply(LogStatus Status, long Value)
{
    /// <summary>A plain success.</summary>
    public static UnitReply Ok => new(LogStatus.Ok, 0);
}
