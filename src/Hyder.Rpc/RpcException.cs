namespace Hyder.Rpc;

/// <summary>
/// A call ended with a status other than <see cref="StatusCode.OK"/>. Server handlers throw it to
/// end a call with that status (and optional trailers); clients receive it when a call fails.
/// </summary>
public sealed class RpcException : Exception
{
    /// <summary>Creates an exception with status <see cref="StatusCode.Unknown"/>.</summary>
    public RpcException()
        : this(new Status(StatusCode.Unknown, string.Empty))
    {
    }

    /// <summary>Creates an exception with status <see cref="StatusCode.Unknown"/> and the given detail.</summary>
    /// <param name="message">The status detail.</param>
    public RpcException(string message)
        : this(new Status(StatusCode.Unknown, message))
    {
    }

    /// <summary>Creates an exception with status <see cref="StatusCode.Unknown"/>, a detail and a cause.</summary>
    /// <param name="message">The status detail.</param>
    /// <param name="innerException">The cause.</param>
    public RpcException(string message, Exception innerException)
        : base(message, innerException)
    {
        Status = new Status(StatusCode.Unknown, message);
        Trailers = new Metadata();
    }

    /// <summary>Creates an exception for a status code and detail.</summary>
    /// <param name="statusCode">The status code; not <see cref="StatusCode.OK"/>.</param>
    /// <param name="detail">The status detail sent as <c>grpc-message</c>.</param>
    public RpcException(StatusCode statusCode, string detail)
        : this(new Status(statusCode, detail))
    {
    }

    /// <summary>Creates an exception for a status, with trailers to send or that were received.</summary>
    /// <param name="status">The status.</param>
    /// <param name="trailers">Custom trailers; none when null.</param>
    /// <param name="innerException">The cause, if any.</param>
    public RpcException(Status status, Metadata? trailers = null, Exception? innerException = null)
        : base(FormatMessage(status), innerException)
    {
        Status = status;
        Trailers = trailers ?? new Metadata();
    }

    /// <summary>The status of the call.</summary>
    public Status Status { get; }

    /// <summary>The status code of the call.</summary>
    public StatusCode StatusCode => Status.StatusCode;

    /// <summary>Custom trailers: sent by a server handler that throws, or received by a client.</summary>
    public Metadata Trailers { get; }

    private static string FormatMessage(Status status) =>
        $"Status(StatusCode=\"{status.StatusCode}\", Detail=\"{status.Detail}\")";
}
