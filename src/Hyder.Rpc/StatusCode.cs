namespace Hyder.Rpc;

/// <summary>
/// gRPC status codes, with the numbers the wire protocol carries in <c>grpc-status</c>
/// (grpc/grpc <c>doc/statuscodes.md</c>).
/// </summary>
public enum StatusCode
{
    /// <summary>Not an error: the call succeeded.</summary>
    OK = 0,

    /// <summary>The call was cancelled, typically by the caller.</summary>
    Cancelled = 1,

    /// <summary>An error with no better code, such as an exception a server handler did not expect.</summary>
    Unknown = 2,

    /// <summary>The caller gave an invalid argument, whatever the state of the system.</summary>
    InvalidArgument = 3,

    /// <summary>The deadline passed before the call completed.</summary>
    DeadlineExceeded = 4,

    /// <summary>A requested entity was not found.</summary>
    NotFound = 5,

    /// <summary>The entity the caller tried to create already exists.</summary>
    AlreadyExists = 6,

    /// <summary>The caller may not run the operation.</summary>
    PermissionDenied = 7,

    /// <summary>A resource ran out, such as a message larger than the configured limit.</summary>
    ResourceExhausted = 8,

    /// <summary>The system is not in a state the operation needs.</summary>
    FailedPrecondition = 9,

    /// <summary>The operation was aborted, for example by a concurrency conflict.</summary>
    Aborted = 10,

    /// <summary>The operation went past a valid range.</summary>
    OutOfRange = 11,

    /// <summary>The operation is not implemented or not supported, such as an unknown method.</summary>
    Unimplemented = 12,

    /// <summary>An invariant of the system or the protocol is broken.</summary>
    Internal = 13,

    /// <summary>The service is unavailable for now; retrying may help.</summary>
    Unavailable = 14,

    /// <summary>Data was lost or corrupted beyond recovery.</summary>
    DataLoss = 15,

    /// <summary>The caller has no valid credentials.</summary>
    Unauthenticated = 16,
}
