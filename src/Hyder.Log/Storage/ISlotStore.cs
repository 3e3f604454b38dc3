namespace Hyder.Log.Storage;

/// <summary>
/// Where a log unit keeps its slots: an append-only sequence of fixed-size slots, each addressed by
/// its location (a slot number that never repeats). The unit keeps the index from log address to
/// location; the store keeps bytes and durability. Appends are serialized by the caller.
/// </summary>
internal interface ISlotStore : IDisposable
{
    /// <summary>Bytes of one slot: header plus block size.</summary>
    int SlotSize { get; }

    /// <summary>Reads back everything stored, cutting a torn tail. Called once, before any append.</summary>
    StoreRecovery Recover();

    /// <summary>
    /// Appends one encoded slot and returns its location. The store has copied the slot when it
    /// returns (the unit gives its buffer back then). Not durable until <see cref="WaitDurableAsync"/>.
    /// </summary>
    long Append(ReadOnlySpan<byte> slot, long address);

    /// <summary>Completes once the slot at <paramref name="location"/> (and every earlier one) is durable.</summary>
    ValueTask WaitDurableAsync(long location);

    /// <summary>Reads the slot at <paramref name="location"/>; false if its space was released.</summary>
    bool TryRead(long location, Span<byte> slot);

    /// <summary>Durably records the unit's seal and trim mark.</summary>
    void SaveMetadata(UnitMetadata metadata);

    /// <summary>Frees the space of every segment whose addresses all lie below <paramref name="trimMark"/>.</summary>
    void ReleaseBelow(long trimMark);
}

/// <summary>One slot found at recovery.</summary>
/// <param name="Location">Where it is.</param>
/// <param name="Kind">What it records; <see cref="SlotKind.Corrupt"/> if the body failed its checksum.</param>
/// <param name="Address">The log address from its (intact) header.</param>
internal readonly record struct RecoveredSlot(long Location, SlotKind Kind, long Address);

/// <summary>What recovery found: the slots in location order, the metadata and a report.</summary>
internal sealed class StoreRecovery
{
    /// <summary>Every slot whose header is intact, in location order.</summary>
    public List<RecoveredSlot> Slots { get; } = [];

    /// <summary>The seal and trim mark.</summary>
    public UnitMetadata Metadata { get; set; }

    /// <summary>
    /// The highest address any durable slot held (from the durable mark), -1 if unknown: the seal
    /// counts it even when that slot's header was damaged since.
    /// </summary>
    public long DurableHighest { get; set; } = -1;

    /// <summary>Counts for the operator.</summary>
    public RecoveryReport Report { get; } = new();
}

/// <summary>What a unit's recovery found and did; logged at start-up and checked by tests.</summary>
public sealed class RecoveryReport
{
    /// <summary>Segment files read.</summary>
    public int Segments { get; internal set; }

    /// <summary>Intact slots read.</summary>
    public long Slots { get; internal set; }

    /// <summary>
    /// The durable mark could not be read: slots were judged as before marks existed (bad slots
    /// after the last intact one are cut as torn).
    /// </summary>
    public bool DurableMarkDamaged { get; internal set; }

    /// <summary>Slots at the end of the last segment that were never durable and were torn or partial, cut off.</summary>
    public long TornSlotsCut { get; internal set; }

    /// <summary>Bytes cut off the end of the last segment.</summary>
    public long TornBytesCut { get; internal set; }

    /// <summary>Durable slots (before the mark or an intact slot) that failed a checksum: reported, never returned as data.</summary>
    public List<long> CorruptLocations { get; } = [];

    /// <summary>Log addresses known (from an intact header) to hold a corrupt block.</summary>
    public List<long> CorruptAddresses { get; } = [];

    /// <inheritdoc />
    public override string ToString() =>
        $"{Segments} segment(s), {Slots} slot(s), torn tail cut: {TornSlotsCut} slot(s) / {TornBytesCut} byte(s), corrupt slots: {CorruptLocations.Count}{(DurableMarkDamaged ? ", durable mark damaged" : "")}";
}
