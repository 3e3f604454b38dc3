using Hyder.Tree.Commutative;

namespace Hyder.Tree.Tests.Oracle;

/// <summary>
/// Judges a transaction only by what it observed of its snapshot and by its isolation level's
/// definition — never by the engine's rules (which <see cref="OracleValidator"/> restates, so a
/// wrong rule would pass there). A transaction may commit at its place in the log when everything
/// the definition protects is unchanged between its snapshot and the state just before it:
/// </summary>
/// <remarks>
/// <list type="bullet">
/// <item>serializable: every key whose value or absence it observed (gets, inserts, deletes, a
/// read-modify-write's read, every key of a scanned range but those it had written itself before
/// the scan). Then it reads exactly what it would read at its place in the log, and the committed
/// history is serial in log order;</item>
/// <item>repeatable read: every key it observed present (items; no phantom protection);</item>
/// <item>snapshot isolation: every key it wrote in the end (first committer wins: no lost update;
/// a key it created and deleted again is no write);</item>
/// <item>read committed: nothing.</item>
/// </list>
/// At every level its commutative operations must apply to the key's value there (bounds, types),
/// and one that failed on a value it knew makes it abort wherever it lands. An abort where all of
/// this holds is a false abort: allowed, and counted by cause.
/// </remarks>
internal static class DefinitionOracle
{
    /// <summary>True when the definition allows the transaction to commit as intention <paramref name="ordinal"/>.</summary>
    public static bool Allows(TransactionRecord t, ReferenceModel model, long ordinal, out string why)
    {
        var s = t.Snapshot;
        var now = ordinal - 1;
        why = "";
        if (t.Doomed)
        {
            why = "an operation failed on a value it wrote itself";
            return false;
        }

        foreach (var (key, list) in t.Operations)
        {
            var error = OracleValidator.Apply(list, model.ValueAt(key, now), out _);
            if (error != FoldError.None)
            {
                why = $"its operations on {Keys.Format(key)} fail there: {error}";
                return false;
            }
        }

        switch (t.Isolation)
        {
            case IsolationLevel.Serializable:
                foreach (var key in t.Observed)
                {
                    if (model.Changed(key, s, now))
                    {
                        why = $"it observed {Keys.Format(key)}, changed since its snapshot";
                        return false;
                    }
                }

                foreach (var (range, own) in t.ObservedRanges)
                {
                    foreach (var key in model.AllKeys)
                    {
                        if (range.Contains(key) && !own.Contains(key) && model.Changed(key, s, now))
                        {
                            why = $"it scanned {range}, where {Keys.Format(key)} changed since its snapshot";
                            return false;
                        }
                    }
                }

                return true;

            case IsolationLevel.RepeatableRead:
                foreach (var key in t.Observed)
                {
                    if (model.VersionAt(key, s) != 0 && model.Changed(key, s, now))
                    {
                        why = $"it observed {Keys.Format(key)} present, changed since its snapshot";
                        return false;
                    }
                }

                return true;

            case IsolationLevel.SnapshotIsolation:
                foreach (var (key, value) in t.Writes)
                {
                    var wrote = value is not null || t.WrittenExisted.Contains(key);
                    if (wrote && model.Changed(key, s, now))
                    {
                        why = $"it wrote {Keys.Format(key)}, which a concurrent transaction wrote first";
                        return false;
                    }
                }

                foreach (var key in t.Operations.Keys)
                {
                    if (t.WritesAfterOperations(key) && model.Changed(key, s, now))
                    {
                        why = $"it wrote {Keys.Format(key)} after operations on it, and a concurrent transaction wrote it first";
                        return false;
                    }
                }

                return true;

            default:
                return true;
        }
    }
}
