
namespace Hyder.Tree.Tests.Oracle;

/// <summary>
/// Validates a transaction key by key against the committed writes of its conflict zone, by the
/// rules of its isolation level (docs/meld.md, "Isolation levels"). A conflict is a key whose
/// version in the last committed state differs from its version in the snapshot.
/// </summary>
internal static class OracleValidator
{
    /// <summary>True when the transaction must commit as intention <paramref name="ordinal"/>.</summary>
    public static bool Commits(TransactionRecord t, ReferenceModel model, long ordinal, out string reason)
    {
        var s = t.Snapshot;
        var now = ordinal - 1;
        reason = "";
        if (t.Isolation == IsolationLevel.ReadCommitted)
        {
            return true;
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
}
