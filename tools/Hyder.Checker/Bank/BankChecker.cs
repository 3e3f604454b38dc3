using System.Globalization;
using System.Text;

namespace Hyder.Checker;

/// <summary>One read of all accounts that breaks the bank's invariants.</summary>
/// <param name="Txn">The reading transaction.</param>
/// <param name="Balances">What it read, account by account.</param>
/// <param name="Explanation">What is wrong, in one sentence.</param>
public sealed record BankViolation(Txn Txn, IReadOnlyDictionary<long, long> Balances, string Explanation)
{
    /// <summary>The explanation and the transaction.</summary>
    public override string ToString() => $"{Explanation}\n    {Txn}";
}

/// <summary>The bank check's verdict.</summary>
public sealed class BankResult
{
    internal BankResult(int reads, IReadOnlyList<BankViolation> violations)
    {
        Reads = reads;
        Violations = violations;
    }

    /// <summary>Committed reads that covered every account.</summary>
    public int Reads { get; }

    /// <summary>The reads that broke the invariants.</summary>
    public IReadOnlyList<BankViolation> Violations { get; }

    /// <summary>True when every full read saw the total and no negative balance.</summary>
    public bool Valid => Violations.Count == 0;

    /// <summary>A verdict line and one entry per violation.</summary>
    public override string ToString()
    {
        var sb = new StringBuilder();
        sb.Append(Valid ? "valid" : "INVALID").Append(": ").Append(Reads).Append(" full reads, ").Append(Violations.Count).Append(" violations\n");
        foreach (var v in Violations)
        {
            sb.Append(v).Append('\n');
        }

        return sb.ToString();
    }
}

/// <summary>
/// The bank workload: registers hold account balances; transfers move money between accounts, so
/// the total never changes. Every committed transaction that reads all accounts (before it
/// writes any) must see exactly the total, and, unless overdrafts are allowed, no negative
/// balance. An account never written reads as nil and counts as 0. Balances repeat, so bank
/// histories do not meet the unique-value rule of <see cref="HistoryChecker"/>: the bank check
/// is a separate, value-level check.
/// </summary>
public static class BankChecker
{
    /// <summary>Checks every full read of <paramref name="accounts"/> against <paramref name="total"/>.</summary>
    public static BankResult Check(History history, IReadOnlyCollection<long> accounts, long total, bool allowNegative = false)
    {
        var violations = new List<BankViolation>();
        var full = 0;
        var seen = new Dictionary<long, long>();
        foreach (var t in history.Transactions)
        {
            if (t.Status != TxnStatus.Ok)
            {
                continue;
            }

            seen.Clear();
            foreach (var m in t.Mops)
            {
                if (m.Kind == MopKind.Write)
                {
                    break;
                }

                if (m.Kind == MopKind.ReadRegister && m.Known && accounts.Contains(m.Key))
                {
                    seen.TryAdd(m.Key, m.Value ?? 0);
                }
            }

            if (seen.Count < accounts.Count)
            {
                continue;
            }

            full++;
            var sum = seen.Values.Sum();
            var balances = new SortedDictionary<long, long>(seen);
            var text = string.Join(", ", balances.Select(b => string.Create(CultureInfo.InvariantCulture, $"{b.Key}: {b.Value}")));
            if (sum != total)
            {
                violations.Add(new BankViolation(t, balances, $"wrong-total: T{t.Id} read a total of {sum}, expected {total} ({text})"));
            }
            else if (!allowNegative && seen.Values.Any(v => v < 0))
            {
                violations.Add(new BankViolation(t, balances, $"negative-balance: T{t.Id} read {text}"));
            }
        }

        return new BankResult(full, violations);
    }
}
