namespace Hyder.Checker;

/// <summary>
/// A client history: invocation and completion events in real-time order. Each process has at
/// most one transaction outstanding; its next completion event completes it. A transaction still
/// outstanding when the history ends counts as indeterminate (info).
/// </summary>
public sealed class History
{
    private IReadOnlyList<Txn>? _txns;

    /// <summary>Wraps a list of events.</summary>
    public History(IReadOnlyList<Op> ops) => Ops = ops;

    /// <summary>The events, in real-time order.</summary>
    public IReadOnlyList<Op> Ops { get; }

    /// <summary>The transactions, paired from the events, in invocation order.</summary>
    /// <exception cref="InvalidHistoryException">A completion has no invocation, or a process invokes twice.</exception>
    public IReadOnlyList<Txn> Transactions => _txns ??= Pair(Ops);

    private static List<Txn> Pair(IReadOnlyList<Op> ops)
    {
        var open = new Dictionary<int, (int Id, int Index)>();
        var slots = new List<Txn?>();
        for (var i = 0; i < ops.Count; i++)
        {
            var op = ops[i];
            if (op.Type == OpType.Invoke)
            {
                if (open.ContainsKey(op.Process))
                {
                    throw new InvalidHistoryException($"event {i}: process {op.Process} invokes while its previous transaction is outstanding");
                }

                open[op.Process] = (slots.Count, i);
                slots.Add(null);
                continue;
            }

            if (!open.Remove(op.Process, out var inv))
            {
                throw new InvalidHistoryException($"event {i}: process {op.Process} completes a transaction it never invoked");
            }

            var invocation = ops[inv.Index];
            var (status, mops) = op.Type switch
            {
                OpType.Ok => (TxnStatus.Ok, op.Txn),
                OpType.Fail => (TxnStatus.Fail, invocation.Txn),
                _ => (TxnStatus.Info, invocation.Txn),
            };
            slots[inv.Id] = new Txn(inv.Id, op.Process, status, mops, inv.Index, i);
        }

        foreach (var (process, inv) in open)
        {
            slots[inv.Id] = new Txn(inv.Id, process, TxnStatus.Info, ops[inv.Index].Txn, inv.Index, -1);
        }

        return slots.Select(t => t!).ToList();
    }
}
