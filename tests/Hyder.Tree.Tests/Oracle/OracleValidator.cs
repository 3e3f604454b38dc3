
using Hyder.Tree.Commutative;

namespace Hyder.Tree.Tests.Oracle;

/// <summary>
/// Validates a transaction key by key against the committed writes of its conflict zone, by the
/// rules of its isolation level (docs/meld.md, "Isolation levels"). A conflict is a key whose
/// version in the last committed state differs from its version in the snapshot.
/// </summary>
internal static class OracleValidator
{
    /// <summary>True when the transaction must commit as intention <paramref name="ordinal"/>.</summary>
    /// <param name="t">What the transaction did.</param>
    /// <param name="model">The committed history.</param>
    /// <param name="ordinal">Its place in the log.</param>
    /// <param name="reason">Why not, when it must abort.</param>
    /// <param name="current">
    /// The values its operations meet; the model's before <paramref name="ordinal"/> unless given
    /// (a group's second part meets the first part's writes).
    /// </param>
    public static bool Commits(TransactionRecord t, ReferenceModel model, long ordinal, out string reason, Func<byte[], byte[]?>? current = null)
    {
        var s = t.Snapshot;
        var now = ordinal - 1;
        reason = "";

        // Operations apply in log order to the value the key has there, at every level.
        if (t.Doomed)
        {
            reason = "an operation failed on a value the transaction wrote itself";
            return false;
        }

        foreach (var (key, list) in t.Operations)
        {
            var error = Apply(list, current is null ? model.ValueAt(key, now) : current(key), out _);
            if (error != FoldError.None)
            {
                reason = $"operations on {Keys.Format(key)}: {error}";
                return false;
            }
        }

        if (t.Isolation == IsolationLevel.ReadCommitted)
        {
            return true;
        }

        foreach (var key in t.Operations.Keys)
        {
            if (t.WritesAfterOperations(key) && model.Changed(key, s, now))
            {
                reason = $"write of {Keys.Format(key)} after operations on it";
                return false;
            }
        }

        foreach (var (key, value) in t.Writes)
        {
            // Inserted and deleted again by the transaction itself: no write reached the log.
            if (value is null && !t.WrittenExisted.Contains(key))
            {
                continue;
            }

            if (model.Changed(key, s, now))
            {
                reason = $"write of {Keys.Format(key)}";
                return false;
            }
        }

        if (t.Isolation == IsolationLevel.SnapshotIsolation)
        {
            return true;
        }

        foreach (var key in t.Reads)
        {
            if (model.Changed(key, s, now))
            {
                reason = $"read of {Keys.Format(key)}";
                return false;
            }
        }

        if (t.Isolation == IsolationLevel.RepeatableRead)
        {
            return true;
        }

        foreach (var key in t.AbsentReads)
        {
            if (model.Changed(key, s, now))
            {
                reason = $"absent read of {Keys.Format(key)}";
                return false;
            }
        }

        foreach (var range in t.Ranges)
        {
            foreach (var key in model.AllKeys)
            {
                if (range.Contains(key) && model.Changed(key, s, now))
                {
                    reason = $"phantom {Keys.Format(key)} in {range}";
                    return false;
                }
            }
        }

        return true;
    }

    /// <summary>Applies a transaction's operations on one key to its value (the engine's one definition of what they mean, unit-tested on its own).</summary>
    public static FoldError Apply(List<Operation> list, byte[]? value, out byte[]? result, bool lenient = false) =>
        OperationFold.Apply(OperationList.Encode([.. list]), value, out result, lenient);
}
