namespace Hyder.Checker;

/// <summary>How a transaction ended, as far as its client knows.</summary>
public enum TxnStatus
{
    /// <summary>Committed.</summary>
    Ok,

    /// <summary>Did not commit.</summary>
    Fail,

    /// <summary>May or may not have committed.</summary>
    Info,
}

/// <summary>
/// A transaction: an invocation paired with its completion. For an ok transaction the
/// micro-operations are the completion's (reads known); otherwise the invocation's (a failed
/// or indeterminate transaction's reads say nothing).
/// </summary>
public sealed class Txn
{
    internal Txn(int id, int process, TxnStatus status, IReadOnlyList<Mop> mops, int invokeIndex, int completeIndex)
    {
        Id = id;
        Process = process;
        Status = status;
        Mops = mops;
        InvokeIndex = invokeIndex;
        CompleteIndex = completeIndex;
    }

    /// <summary>Position among the history's transactions, in invocation order (T0, T1, ...).</summary>
    public int Id { get; }

    /// <summary>The client that ran it.</summary>
    public int Process { get; }

    /// <summary>How it ended.</summary>
    public TxnStatus Status { get; }

    /// <summary>Its micro-operations.</summary>
    public IReadOnlyList<Mop> Mops { get; }

    /// <summary>Index of the invocation event in the history.</summary>
    public int InvokeIndex { get; }

    /// <summary>Index of the completion event, or -1 when the history ends before it completes.</summary>
    public int CompleteIndex { get; }

    /// <summary>One line: <c>T3 (p1, ok) [append 1 5, r 2 [3]]</c>.</summary>
    public override string ToString() =>
        $"T{Id} (p{Process}, {Status.ToString().ToLowerInvariant()}) [{string.Join(", ", Mops)}]";
}
