namespace Hyder.Simulation.Cluster;

/// <summary>One commutative step of a counter transaction: an Add (bounded at 0 below when negative) or a read.</summary>
/// <param name="Counter">Which hot counter (0 … <see cref="CounterLedger.Counters"/> − 1).</param>
/// <param name="Delta">What the Add adds (0 for a read).</param>
/// <param name="Read">A read of the counter instead of an Add: it meets the split key and is stashed.</param>
internal readonly record struct CounterOp(int Counter, long Delta, bool Read)
{
    /// <inheritdoc />
    public override string ToString() => Read ? $"get c{Counter}" : $"add c{Counter} {Delta:+#;-#;0}{(Delta < 0 ? " (min 0)" : "")}";
}

/// <summary>
/// What the clients know of the hot counters: the Adds of acknowledged transactions, and those
/// whose outcome is unknown. A counter's value must be the sum of its acknowledged Adds plus the
/// sum of some subset of its unknown ones, each counted at most once (a retried append that left
/// two copies of one intention in the log must count once: the server's duplicate rule).
/// </summary>
internal sealed class CounterLedger
{
    /// <summary>The hot counters of the workload.</summary>
    public const int Counters = 3;

    private readonly long[] _acked = new long[Counters];
    private readonly List<long>[] _unknown = [.. Enumerable.Range(0, Counters).Select(_ => new List<long>())];

    /// <summary>Adds of committed transactions.</summary>
    public int AddsCommitted { get; private set; }

    /// <summary>Adds of transactions whose outcome the client does not know.</summary>
    public int AddsUnknown { get; private set; }

    /// <summary>Reads of counters in committed transactions.</summary>
    public int ReadsCommitted { get; private set; }

    /// <summary>The key of counter <paramref name="counter"/>.</summary>
    public static byte[] Key(int counter) => System.Text.Encoding.ASCII.GetBytes($"c{counter:D8}");

    /// <summary>Records the client's view of a transaction's counter steps.</summary>
    public void Record(IReadOnlyList<CounterOp> ops, TxnOutcome outcome)
    {
        foreach (var op in ops)
        {
            if (op.Read)
            {
                ReadsCommitted += outcome == TxnOutcome.Ok ? 1 : 0;
                continue;
            }

            switch (outcome)
            {
                case TxnOutcome.Ok:
                    _acked[op.Counter] += op.Delta;
                    AddsCommitted++;
                    break;
                case TxnOutcome.Info:
                    _unknown[op.Counter].Add(op.Delta);
                    AddsUnknown++;
                    break;
            }
        }
    }

    /// <summary>Null when <paramref name="value"/> is a possible value of the counter, else why not.</summary>
    public string? Check(int counter, long value)
    {
        if (value < 0)
        {
            return $"counter c{counter} is {value}: its decrements are bounded at 0";
        }

        var rest = value - _acked[counter];
        var unknown = _unknown[counter];
        if (Reachable(unknown, rest))
        {
            return null;
        }

        return $"counter c{counter} is {value}, but its acknowledged Adds sum to {_acked[counter]} and no subset of its {unknown.Count} unknown Add(s) [{string.Join(", ", unknown)}] sums to the other {rest} (a lost or double-counted Add)";
    }

    /// <summary>True when some subset of <paramref name="deltas"/> (each used at most once) sums to <paramref name="target"/>.</summary>
    public static bool Reachable(IReadOnlyList<long> deltas, long target)
    {
        var sums = new HashSet<long> { 0 };
        foreach (var d in deltas)
        {
            foreach (var s in sums.ToArray())
            {
                sums.Add(s + d);
            }
        }

        return sums.Contains(target);
    }
}
