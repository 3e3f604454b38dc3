using System.Diagnostics.CodeAnalysis;

namespace Hyder.Tree;

/// <summary>Keeps throw sites out of hot methods so they stay small and inlinable.</summary>
internal static class ThrowHelper
{
    [DoesNotReturn]
    public static void ThrowArgumentOutOfRange(string name, string message) =>
        throw new ArgumentOutOfRangeException(name, message);

    [DoesNotReturn]
    public static void ThrowArgument(string name, string message) => throw new ArgumentException(message, name);

    [DoesNotReturn]
    public static void ThrowInvalidOperation(string message) => throw new InvalidOperationException(message);

    [DoesNotReturn]
    public static void ThrowInvariant(string message) => throw new InvariantViolationException(message);

    [DoesNotReturn]
    public static void ThrowRejected(string message) => throw new IntentionRejectedException(message);

    [DoesNotReturn]
    public static void ThrowRejected(string prefix, string reason) => throw new IntentionRejectedException(prefix + reason, reason);
}

/// <summary>
/// An always-on invariant failed: continuing would corrupt a tree or lose data. Never caught on the
/// hot path; it means a bug (or memory corruption), and the process should stop melding.
/// </summary>
public sealed class InvariantViolationException : Exception
{
    /// <summary>Creates the exception.</summary>
    public InvariantViolationException(string message) : base(message) { }
}

/// <summary>
/// An intention breaks the engine's rules (keys out of order, a pointer that does not resolve,
/// metadata that contradicts itself). Every server rejects the same intention the same way, and the
/// last committed state is left untouched.
/// </summary>
public sealed class IntentionRejectedException : Exception
{
    /// <summary>Creates the exception.</summary>
    public IntentionRejectedException(string message) : base(message) => Reason = message;

    /// <summary>Creates the exception with the fault alone (<paramref name="reason"/>) and the message that places it.</summary>
    public IntentionRejectedException(string message, string reason) : base(message) => Reason = reason;

    /// <summary>
    /// The fault found, without the intention's place in the log: the same words whether the
    /// intention was refused before its append or rejected when read from the log.
    /// </summary>
    public string Reason { get; }
}
