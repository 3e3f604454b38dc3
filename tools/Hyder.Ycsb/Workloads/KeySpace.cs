namespace Hyder.Ycsb.Workloads;

/// <summary>What a key space's values are.</summary>
internal enum ValueKind
{
    /// <summary>Opaque byte strings of the configured value size.</summary>
    Bytes,

    /// <summary>64-bit signed counters (little-endian 8 bytes where a target stores bytes), changed by Add.</summary>
    Counter,
}

/// <summary>
/// A named set of keys with values of one kind (YCSB's <c>usertable</c>; Doppel's users and pages).
/// A target keeps each in its own table. <see cref="Id"/> is the index in the workload's list.
/// </summary>
internal sealed record KeySpace(int Id, string Name, ValueKind Kind, long InitialRecords);
