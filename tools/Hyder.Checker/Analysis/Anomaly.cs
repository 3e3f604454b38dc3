using System.Text;

namespace Hyder.Checker;

/// <summary>
/// One anomaly found in a history: its name (see <see cref="Anomalies"/>), the transactions
/// involved, the dependency cycle when it is a cycle anomaly (in order, each edge's target the
/// next edge's source, the last edge closing the cycle) and readable text.
/// </summary>
public sealed class Anomaly
{
    private readonly IReadOnlyList<Txn> _history;

    internal Anomaly(IReadOnlyList<Txn> history, string name, IReadOnlyList<Txn> transactions, IReadOnlyList<Edge> cycle, string explanation)
    {
        _history = history;
        Name = name;
        Transactions = transactions;
        Cycle = cycle;
        Explanation = explanation;
    }

    /// <summary>The anomaly class, one of the <see cref="Anomalies"/> names.</summary>
    public string Name { get; }

    /// <summary>The transactions involved.</summary>
    public IReadOnlyList<Txn> Transactions { get; }

    /// <summary>The cycle's edges (empty for anomalies that are not cycles).</summary>
    public IReadOnlyList<Edge> Cycle { get; }

    /// <summary>What was observed, in one sentence.</summary>
    public string Explanation { get; }

    /// <summary>Several lines: name and explanation, the transactions, then one line per edge.</summary>
    public override string ToString()
    {
        var sb = new StringBuilder();
        sb.Append(Name).Append(": ").Append(Explanation).Append('\n');
        foreach (var t in Transactions)
        {
            sb.Append("    ").Append(t).Append('\n');
        }

        foreach (var e in Cycle)
        {
            sb.Append("    ").Append(e.Describe(_history)).Append('\n');
        }

        return sb.ToString();
    }
}
