using Hyder.Tree.Commutative;

namespace Hyder.Tree.Tests.Oracle;

/// <summary>The simulation's commutative operations: what they are, how the engine runs them, and how a pair's second part meets the first's.</summary>
internal static partial class LogSimulation
{
    /// <summary>
    /// What the second part of a pair meets on key <paramref name="k"/> when the first committed
    /// before it: the first's effect on it, else the model's value.
    /// </summary>
    private static byte[]? AfterFirst(Submitted first, byte[] k, ReferenceModel model)
    {
        var before = model.ValueAt(k, first.Ordinal - 1);
        if (first.Rec.Operations.TryGetValue(k, out var list))
        {
            return OracleValidator.Apply(list, before, out var value) == FoldError.None ? value : before;
        }

        if (first.Local.TryGetValue(k, out var v) && (v is not null || first.Rec.WrittenExisted.Contains(k)))
        {
            return v;
        }

        return before;
    }

    /// <summary>True when the second part has operations on a key the first touched (its brute force, run without the first, does not apply).</summary>
    private static bool Overlaps(Submitted first, Submitted second) =>
        second.Rec.Operations.Keys.Any(k => first.Local.ContainsKey(k) || first.Rec.Operations.ContainsKey(k));

    /// <summary>Bounds of every Add on an escrow key (role 1).</summary>
    private const int EscrowMin = 0, EscrowMax = 1000;

    /// <summary>A commutative operation for the key's role (see <see cref="SimulationConfig.CommutativePercent"/>).</summary>
    private static Operation RandomOperation(Random rng, int keyIndex, Func<byte[]> newValue) => (keyIndex % 4) switch
    {
        0 => rng.Next(4) switch
        {
            0 or 1 => Operation.Add(rng.Next(-20, 21)),
            2 => Operation.MaxOf(rng.Next(-100, 100)),
            _ => Operation.MinOf(rng.Next(-100, 100)),
        },
        1 => Operation.Add(rng.Next(-400, 401), EscrowMin, EscrowMax),
        2 => Operation.OPut(rng.Next(10), newValue()),
        _ => Operation.TopKInsert(3, rng.Next(10), newValue()),
    };

    /// <summary>Runs one commutative operation on the engine's transaction.</summary>
    private static void Invoke(Transaction tx, byte[] key, in Operation op)
    {
        switch (op.Kind)
        {
            case ChangeKind.Add:
                tx.Add(key, op.Number, op.Min == long.MinValue ? null : op.Min, op.Max == long.MaxValue ? null : op.Max);
                break;
            case ChangeKind.Max:
                tx.Max(key, op.Number);
                break;
            case ChangeKind.Min:
                tx.Min(key, op.Number);
                break;
            case ChangeKind.OPut:
                tx.OPut(key, op.Number, op.Value!);
                break;
            default:
                tx.TopKInsert(key, op.K, op.Number, op.Value!);
                break;
        }
    }

    /// <summary>What the transaction sees of a key through its operations (a failing one is skipped: the transaction will abort).</summary>
    private static byte[]? Lenient(List<Operation> list, byte[]? snapshotValue)
    {
        OracleValidator.Apply(list, snapshotValue, out var view, lenient: true);
        return view;
    }
}
