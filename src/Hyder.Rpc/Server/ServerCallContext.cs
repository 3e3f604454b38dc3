using Microsoft.AspNetCore.Http;

namespace Hyder.Rpc;

/// <summary>
/// What a server handler knows about its call: the method, the caller, the deadline, the request
/// headers, the cancellation token (cancelled when the client cancels or the deadline passes), and
/// the response headers and trailers it sends back.
/// </summary>
public abstract class ServerCallContext
{
    /// <summary>For the server's own call type.</summary>
    protected ServerCallContext()
    {
    }

    /// <summary>The full method name, <c>/package.Service/Method</c>.</summary>
    public abstract string Method { get; }

    /// <summary>Who makes the call, when the server authenticates callers (<see cref="RpcServerOptions.Authenticator"/>); null otherwise.</summary>
    public virtual Security.CallerIdentity? Caller => null;

    /// <summary>The caller's address, as <c>ipv4:127.0.0.1:5000</c> or <c>ipv6:[::1]:5000</c>.</summary>
    public abstract string Peer { get; }

    /// <summary>The deadline (UTC) from the request's <c>grpc-timeout</c>; <see cref="DateTime.MaxValue"/> when there is none.</summary>
    public abstract DateTime Deadline { get; }

    /// <summary>The request's custom metadata (protocol headers are left out).</summary>
    public abstract Metadata RequestHeaders { get; }

    /// <summary>Trailers sent with the status when the call ends.</summary>
    public abstract Metadata ResponseTrailers { get; }

    /// <summary>Cancelled when the client cancels the call (RST_STREAM), the connection drops, or the deadline passes.</summary>
    public abstract CancellationToken CancellationToken { get; }

    /// <summary>The status the call ends with when the handler returns normally (default OK). Throwing <see cref="RpcException"/> is the other way.</summary>
    public abstract Status Status { get; set; }

    /// <summary>The HTTP context of the call, for what this API does not cover (TLS, connection info).</summary>
    public abstract HttpContext HttpContext { get; }

    /// <summary>Sends the response headers now, with custom metadata; at most once, before the first message.</summary>
    /// <param name="responseHeaders">The custom headers.</param>
    /// <returns>A task that completes when the headers are flushed.</returns>
    public abstract Task WriteResponseHeadersAsync(Metadata responseHeaders);
}
