namespace Hyder.Checker;

/// <summary>The kind of a history event, as a client records it.</summary>
public enum OpType
{
    /// <summary>The client sent the transaction.</summary>
    Invoke,

    /// <summary>The transaction committed; read results are known.</summary>
    Ok,

    /// <summary>The transaction certainly did not commit (aborted, rejected).</summary>
    Fail,

    /// <summary>Indeterminate: the client does not know whether it committed (timeout, crash).</summary>
    Info,
}

/// <summary>
/// One event of a history: an invocation or a completion of a transaction by a process (a
/// client that runs one transaction at a time). The event's position in the history is its
/// real-time order; <see cref="Time"/> is an optional clock reading, for people and tools.
/// </summary>
/// <param name="Process">The client that runs the transaction.</param>
/// <param name="Type">Invocation or completion.</param>
/// <param name="Txn">The micro-operations: reads unknown in an invocation, known in an ok completion.</param>
/// <param name="Time">Optional timestamp (any monotonic unit, e.g. nanoseconds).</param>
public sealed record Op(int Process, OpType Type, IReadOnlyList<Mop> Txn, long? Time = null);
