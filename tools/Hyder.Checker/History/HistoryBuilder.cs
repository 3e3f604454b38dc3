namespace Hyder.Checker;

/// <summary>
/// Builds histories by hand or from an executor: <see cref="Invoke"/> then <see cref="Ok"/>,
/// <see cref="Fail"/> or <see cref="Info"/>; <see cref="Txn(int, Mop[])"/> for a transaction
/// that completes before anything else happens. Invocations record reads as unknown.
/// </summary>
public sealed class HistoryBuilder
{
    private readonly List<Op> _ops = [];
    private readonly Dictionary<int, IReadOnlyList<Mop>> _outstanding = [];

    /// <summary>Events so far.</summary>
    public int Count => _ops.Count;

    /// <summary>Records an invocation by <paramref name="process"/>.</summary>
    public HistoryBuilder Invoke(int process, params Mop[] mops)
    {
        var invocation = mops.Select(m => m.AsInvocation()).ToArray();
        _outstanding[process] = invocation;
        _ops.Add(new Op(process, OpType.Invoke, invocation, _ops.Count));
        return this;
    }

    /// <summary>Records the commit of <paramref name="process"/>'s transaction with its results.</summary>
    public HistoryBuilder Ok(int process, params Mop[] completed) => Complete(process, OpType.Ok, completed);

    /// <summary>Records that <paramref name="process"/>'s transaction did not commit.</summary>
    public HistoryBuilder Fail(int process) => Complete(process, OpType.Fail, null);

    /// <summary>Records that <paramref name="process"/>'s transaction's outcome is unknown.</summary>
    public HistoryBuilder Info(int process) => Complete(process, OpType.Info, null);

    /// <summary>An invocation immediately followed by its ok completion.</summary>
    public HistoryBuilder Txn(int process, params Mop[] completed) => Invoke(process, completed).Ok(process, completed);

    /// <summary>An invocation immediately followed by a failure.</summary>
    public HistoryBuilder Failed(int process, params Mop[] mops) => Invoke(process, mops).Fail(process);

    /// <summary>The history built so far.</summary>
    public History Build() => new(_ops.ToArray());

    private HistoryBuilder Complete(int process, OpType type, Mop[]? completed)
    {
        if (!_outstanding.Remove(process, out var invocation))
        {
            throw new InvalidOperationException($"process {process} has no outstanding transaction");
        }

        _ops.Add(new Op(process, type, completed ?? invocation, _ops.Count));
        return this;
    }
}
