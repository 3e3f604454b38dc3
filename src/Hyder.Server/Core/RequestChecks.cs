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

        for (var i = 0; i < operations.Count; i++)
        {
            Operation(operations[i], limits, i);
        }
    }

    public static void Operation(in Operation op, EngineLimits limits, int index = -1)
    {
        var where = index >= 0 ? $"operation {index}: " : "";
        switch (op.Kind)
        {
            case OperationKind.Get:
            case OperationKind.Delete:
            case OperationKind.Add:
                Key(op.Key, limits, allowEmpty: false, where);
                break;
            case OperationKind.Put:
                Key(op.Key, limits, allowEmpty: false, where);
                if (op.Value is null)
                {
                    throw Invalid($"{where}a put needs a value");
                }

                if (op.Value.Length > limits.MaxValueBytes)
                {
                    throw Invalid($"{where}a value of {op.Value.Length} bytes; the limit is {limits.MaxValueBytes}");
                }

                break;
            case OperationKind.Scan:
                Key(op.Key, limits, allowEmpty: true, where);
                if (op.End is not null)
                {
                    Key(op.End, limits, allowEmpty: true, where);
                }

                if (op.Limit < 0 || op.Limit > limits.MaxScanRows)
                {
                    throw Invalid($"{where}a scan limit of {op.Limit}; it must be 0 (the maximum) to {limits.MaxScanRows}");
                }

                break;
            default:
                throw Invalid($"{where}unknown operation kind {(int)op.Kind}");
        }
    }

    public static void Key(byte[]? key, EngineLimits limits, bool allowEmpty, string where = "")
    {
        if (key is null || (!allowEmpty && key.Length == 0))
        {
            throw Invalid($"{where}a key must not be empty");
        }

        if (key.Length > limits.MaxKeyBytes)
        {
            throw Invalid($"{where}a key of {key.Length} bytes; the limit is {limits.MaxKeyBytes}");
        }
    }

    private static EngineException Invalid(string reason) => new(EngineErrorCode.InvalidArgument, reason);
}
