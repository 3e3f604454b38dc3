using Grpc.Core;
namespace Hyder.Client;

/// <summary>A call to a Hyder server failed; <see cref="StatusCode"/> says how.</summary>
public class HyderException : Exception
{
    /// <summary>Creates an exception with <see cref="StatusCode.Unknown"/>.</summary>
    public HyderException()
        : this(StatusCode.Unknown, "The call failed.")
    {
    }

    /// <summary>Creates an exception with <see cref="StatusCode.Unknown"/>.</summary>
    /// <param name="message">What happened.</param>
    public HyderException(string message)
        : this(StatusCode.Unknown, message)
    {
    }

    /// <summary>Creates an exception with <see cref="StatusCode.Unknown"/>.</summary>
    /// <param name="message">What happened.</param>
    /// <param name="innerException">The cause.</param>
    public HyderException(string message, Exception? innerException)
        : this(StatusCode.Unknown, message, innerException)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="statusCode">The gRPC status code.</param>
    /// <param name="message">The server's status message, or what happened.</param>
    /// <param name="innerException">The cause.</param>
    public HyderException(StatusCode statusCode, string message, Exception? innerException = null)
        : base(message, innerException) => StatusCode = statusCode;

    /// <summary>The gRPC status code.</summary>
    public StatusCode StatusCode { get; }
}

/// <summary>
/// The transaction aborted: nothing it wrote was applied. Retrying it may succeed when
/// <see cref="IsRetryable"/> (a conflict); <see cref="BoundViolatedException"/> and
/// <see cref="TypeMismatchException"/> are not retried by <see cref="HyderClient.ReadWriteAsync(Func{HyderTransaction, Task}, IsolationLevel, CancellationToken)"/>.
/// </summary>
public class TransactionAbortedException : HyderException
{
    /// <summary>Creates an exception.</summary>
    public TransactionAbortedException()
        : this(AbortCause.None, "The transaction aborted.", 0, 0)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    public TransactionAbortedException(string message)
        : this(AbortCause.None, message, 0, 0)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    /// <param name="innerException">The cause.</param>
    public TransactionAbortedException(string message, Exception? innerException)
        : base(StatusCode.Aborted, message, innerException)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="cause">The check that aborted it.</param>
    /// <param name="detail">The server's sentence: the conflicting key, the rejection reason.</param>
    /// <param name="ordinal">Its intention's ordinal (0 when it never reached the log).</param>
    /// <param name="snapshotSequence">The committed state it read.</param>
    public TransactionAbortedException(AbortCause cause, string detail, long ordinal, long snapshotSequence)
        : base(StatusCode.Aborted, $"The transaction aborted ({cause}): {detail}")
    {
        Cause = cause;
        Detail = detail;
        Ordinal = ordinal;
        SnapshotSequence = snapshotSequence;
    }

    /// <summary>The check that aborted the transaction (<see cref="AbortCause.None"/> when the client aborted it).</summary>
    public AbortCause Cause { get; }

    /// <summary>The server's sentence about it.</summary>
    public string Detail { get; } = string.Empty;

    /// <summary>The intention's ordinal in the log (0 when it never reached the log).</summary>
    public long Ordinal { get; }

    /// <summary>The committed state the transaction read.</summary>
    public long SnapshotSequence { get; }

    /// <summary>
    /// True when running the transaction again may commit: a conflict with a concurrent
    /// transaction, a snapshot too old. False for <see cref="AbortCause.BoundViolated"/> and
    /// <see cref="AbortCause.TypeMismatch"/>, which the data causes: the same transaction on the
    /// same data fails the same way.
    /// </summary>
    public bool IsRetryable => Cause is not (AbortCause.BoundViolated or AbortCause.TypeMismatch);
}

/// <summary>
/// The transaction aborted because a bounded Add would have left its [min, max] where the
/// transaction landed in the log (escrow: out of stock, over a limit). Not retried by the client.
/// </summary>
public sealed class BoundViolatedException : TransactionAbortedException
{
    /// <summary>Creates an exception.</summary>
    public BoundViolatedException()
        : this("a bounded Add left its bounds", 0, 0)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    public BoundViolatedException(string message)
        : this(message, 0, 0)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    /// <param name="innerException">The cause.</param>
    public BoundViolatedException(string message, Exception? innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="detail">The server's sentence (names the key).</param>
    /// <param name="ordinal">The intention's ordinal.</param>
    /// <param name="snapshotSequence">The committed state it read.</param>
    public BoundViolatedException(string detail, long ordinal, long snapshotSequence)
        : base(AbortCause.BoundViolated, detail, ordinal, snapshotSequence)
    {
    }
}

/// <summary>
/// The transaction aborted because a commutative operation met a value of another type (an Add on
/// a key that does not hold an 8-byte integer, …). Not retried by the client.
/// </summary>
public sealed class TypeMismatchException : TransactionAbortedException
{
    /// <summary>Creates an exception.</summary>
    public TypeMismatchException()
        : this("a commutative operation met a value of another type", 0, 0)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    public TypeMismatchException(string message)
        : this(message, 0, 0)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    /// <param name="innerException">The cause.</param>
    public TypeMismatchException(string message, Exception? innerException)
        : base(message, innerException)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="detail">The server's sentence (names the key).</param>
    /// <param name="ordinal">The intention's ordinal.</param>
    /// <param name="snapshotSequence">The committed state it read.</param>
    public TypeMismatchException(string detail, long ordinal, long snapshotSequence)
        : base(AbortCause.TypeMismatch, detail, ordinal, snapshotSequence)
    {
    }
}

/// <summary>
/// The server could not learn whether the transaction committed (e.g. it stopped after appending
/// the intention). Read the data back before retrying a transaction that is not idempotent.
/// </summary>
public sealed class TransactionOutcomeUnknownException : HyderException
{
    /// <summary>Creates an exception.</summary>
    public TransactionOutcomeUnknownException()
        : this("The transaction's outcome is unknown.")
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    public TransactionOutcomeUnknownException(string message)
        : base(StatusCode.Unknown, message)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="message">What happened.</param>
    /// <param name="innerException">The cause.</param>
    public TransactionOutcomeUnknownException(string message, Exception? innerException)
        : base(StatusCode.Unknown, message, innerException)
    {
    }

    /// <summary>Creates an exception.</summary>
    /// <param name="detail">The server's sentence.</param>
    /// <param name="ordinal">The intention's ordinal, when the server knows it.</param>
    public TransactionOutcomeUnknownException(string detail, long ordinal)
        : base(StatusCode.Unknown, $"The transaction's outcome is unknown: {detail}") => Ordinal = ordinal;

    /// <summary>The intention's ordinal in the log, when known (0 otherwise).</summary>
    public long Ordinal { get; }
}
