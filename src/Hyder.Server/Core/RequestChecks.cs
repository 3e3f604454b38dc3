using Hyder.Server.Engine;
using Hyder.Tree;

namespace Hyder.Server.Core;

/// <summary>Checks requests against the limits before anything runs, so nothing is half-applied.</summary>
internal static class RequestChecks
{
    public static void Validate(IsolationLevel isolation, IReadOnlyList<Operation> operations, EngineLimits limits)
    {
        if (!Enum.IsDefined(isolation))
        {
            throw Invalid($"unknown isolation level {(int)isolation}");
        }

        if (operations.Count == 0)
        {
            throw Invalid("a transaction needs at least one operation");
        }

        if (operations.Count > limits.MaxOperations)
        {
            throw Invalid($"{operations.Count} operations in one transaction; the limit is {limits.MaxOperations}");
        }

        var adds = 0;
        for (var i = 0; i < operations.Count; i++)
        {
            Operation(operations[i], limits, i);
            adds += operations[i].Kind == OperationKind.Add ? 1 : 0;
        }

        if (adds > 1)
        {
            AddRuns(operations);
        }
    }

    public static void Operation(in Operation op, EngineLimits limits, int index = -1)
    {
        switch (op.Kind)
        {
            case OperationKind.Get:
            case OperationKind.Delete:
            case OperationKind.Max:
            case OperationKind.Min:
                Key(op.Key, limits, allowEmpty: false, index);
                break;
            case OperationKind.Add:
                Key(op.Key, limits, allowEmpty: false, index);
                if (op.Min is { } min && op.Max is { } max && min > max)
                {
                    throw Invalid($"{Where(index)}an Add's bounds [{min}, {max}] are empty (min > max)");
                }

                if (!Feasible(op.Delta, op.Min, op.Max))
                {
                    throw Invalid($"{Where(index)}an Add of {op.Delta} can never land in [{op.Min?.ToString() ?? "-2^63"}, {op.Max?.ToString() ?? "2^63-1"}] from a 64-bit value");
                }

                break;
            case OperationKind.Put:
            case OperationKind.OPut:
            case OperationKind.TopKInsert:
                Key(op.Key, limits, allowEmpty: false, index);
                if (op.Value is null)
                {
                    throw Invalid($"{Where(index)}{Name(op.Kind)} needs a value");
                }

                if (op.Value.Length > limits.MaxValueBytes)
                {
                    throw Invalid($"{Where(index)}a value of {op.Value.Length} bytes; the limit is {limits.MaxValueBytes}");
                }

                if (op.Kind == OperationKind.TopKInsert && (op.K < 1 || op.K > limits.MaxTopK))
                {
                    throw Invalid($"{Where(index)}a TopKInsert's k is {op.K}; it must be 1 to {limits.MaxTopK}");
                }

                break;
            case OperationKind.Scan:
                Key(op.Key, limits, allowEmpty: true, index);
                if (op.End is not null)
                {
                    Key(op.End, limits, allowEmpty: true, index);
                }

                if (op.Limit < 0 || op.Limit > limits.MaxScanRows)
                {
                    throw Invalid($"{Where(index)}a scan limit of {op.Limit}; it must be 0 (the maximum) to {limits.MaxScanRows}");
                }

                break;
            default:
                throw Invalid($"{Where(index)}unknown operation kind {(int)op.Kind}");
        }
    }

    public static void Key(byte[]? key, EngineLimits limits, bool allowEmpty, int index = -1)
    {
        if (key is null || (!allowEmpty && key.Length == 0))
        {
            throw Invalid($"{Where(index)}a key must not be empty");
        }

        if (key.Length > limits.MaxKeyBytes)
        {
            throw Invalid($"{Where(index)}a key of {key.Length} bytes; the limit is {limits.MaxKeyBytes}");
        }
    }

    /// <summary>
    /// Rejects a one-shot transaction whose Adds on one key can never all land in their bounds: for
    /// each run of Adds on a key (a put, delete or other commutative operation of the key starts a
    /// new run; reads do not), some 64-bit starting value must bring every Add's result into its
    /// [min, max] and the 64-bit range. Otherwise meld would abort it with BoundViolated wherever it
    /// landed, so it is refused before it reaches the log. Only taken when there are two Adds or more.
    /// </summary>
    private static void AddRuns(IReadOnlyList<Operation> operations)
    {
        var runs = new Dictionary<string, (Int128 Sum, Int128 Low, Int128 High)>(StringComparer.Ordinal);
        for (var i = 0; i < operations.Count; i++)
        {
            var op = operations[i];
            if (!op.IsWrite)
            {
                continue;
            }

            var key = Convert.ToHexString(op.Key);
            if (op.Kind != OperationKind.Add)
            {
                runs.Remove(key);
                continue;
            }

            var run = runs.TryGetValue(key, out var r) ? r : (Sum: Int128.Zero, Low: (Int128)long.MinValue, High: (Int128)long.MaxValue);
            run.Sum += op.Delta;
            run.Low = Int128.Max(run.Low, (op.Min ?? long.MinValue) - run.Sum);
            run.High = Int128.Min(run.High, (op.Max ?? long.MaxValue) - run.Sum);
            if (run.Low > run.High)
            {
                throw Invalid($"operation {i}: the transaction's Adds on key {Tree.Keys.Format(op.Key)} can never all land in their bounds and the 64-bit range, whatever the key holds");
            }

            runs[key] = run;
        }
    }

    /// <summary>True when some 64-bit value plus <paramref name="delta"/> lies in [min, max] (each optional) and in the 64-bit range.</summary>
    private static bool Feasible(long delta, long? min, long? max)
    {
        var low = Int128.Max(long.MinValue, (Int128)(min ?? long.MinValue) - delta);
        var high = Int128.Min(long.MaxValue, (Int128)(max ?? long.MaxValue) - delta);
        return low <= high;
    }

    private static string Name(OperationKind kind) => kind switch
    {
        OperationKind.Put => "a put",
        OperationKind.OPut => "an OPut",
        _ => $"a {kind}",
    };

    /// <summary>The operation a refusal names: formatted only when a request is refused, never per operation that passes.</summary>
    private static string Where(int index) => index >= 0 ? $"operation {index}: " : "";

    private static EngineException Invalid(string reason) => new(EngineErrorCode.InvalidArgument, reason);
}
