namespace Hyder.Ycsb.Workloads;

/// <summary>The operations a transaction is made of (YCSB's five, plus delete and Doppel's Add).</summary>
internal enum OperationKind
{
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
    Delete,
    Add,
}

/// <summary>
/// One operation of a planned transaction. Keys are numbers in a key space; the executor encodes
/// them with the run's <see cref="KeyCodec"/> and fills values right before the call.
/// </summary>
/// <param name="Kind">What to do.</param>
/// <param name="Space">The key space's <see cref="KeySpace.Id"/>.</param>
/// <param name="Key">The key number (the first key of a scan).</param>
/// <param name="Count">Records a scan asks for; the amount an Add adds.</param>
/// <param name="Min">A bounded Add's lowest result (null: none); for a counter read, the lowest value it may see.</param>
/// <param name="Max">A bounded Add's highest result (null: none); for a counter read, the highest value it may see.</param>
internal readonly record struct Operation(OperationKind Kind, int Space, long Key, long Count = 0, long? Min = null, long? Max = null);

/// <summary>A transaction a workload planned: its operations in order and how to run it.</summary>
internal sealed class TransactionPlan
{
    public List<Operation> Operations { get; } = new(16);

    public IsolationLevel Isolation { get; set; } = IsolationLevel.Serializable;

    /// <summary>Every operation only reads: targets may run it as a read-only transaction.</summary>
    public bool ReadOnly { get; set; }

    public void Clear()
    {
        Operations.Clear();
        ReadOnly = false;
    }
}

/// <summary>The isolation levels of DESIGN §3, chosen per transaction.</summary>
internal enum IsolationLevel
{
    Serializable,
    RepeatableRead,
    Snapshot,
    ReadCommitted,
}
