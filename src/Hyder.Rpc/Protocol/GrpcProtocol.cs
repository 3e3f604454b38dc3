namespace Hyder.Rpc;

/// <summary>Names and rules of gRPC's HTTP/2 mapping (grpc/grpc <c>doc/PROTOCOL-HTTP2.md</c>).</summary>
internal static class GrpcProtocol
{
    public const string ContentType = "application/grpc";
    public const string StatusHeader = "grpc-status";
    public const string MessageHeader = "grpc-message";
    public const string TimeoutHeader = "grpc-timeout";
    public const string EncodingHeader = "grpc-encoding";
    public const string AcceptEncodingHeader = "grpc-accept-encoding";
    public const string IdentityEncoding = "identity";

    /// <summary>The 5-byte prefix of every message: a compressed flag and a big-endian length.</summary>
    public const int FrameHeaderSize = 5;

    /// <summary>The receive limit when none is configured, as in the official implementations.</summary>
    public const int DefaultMaxReceiveMessageSize = 4 * 1024 * 1024;

    /// <summary>
    /// Whether a request's content type is one this implementation serves: <c>application/grpc</c>
    /// or <c>application/grpc+proto</c>, optionally followed by parameters. Other
    /// <c>application/grpc+X</c> subtypes name a message encoding we do not speak.
    /// </summary>
    public static bool IsProtoContentType(string? contentType)
    {
        if (contentType is null)
        {
            return false;
        }

        var value = contentType.AsSpan();
        var semicolon = value.IndexOf(';');
        if (semicolon >= 0)
        {
            value = value[..semicolon];
        }

        value = value.Trim();
        return value.Equals(ContentType, StringComparison.OrdinalIgnoreCase)
            || value.Equals("application/grpc+proto", StringComparison.OrdinalIgnoreCase);
    }

    /// <summary>Whether a response's content type is gRPC at all (a client accepts any subtype).</summary>
    public static bool IsGrpcContentType(string? contentType) =>
        contentType is not null && contentType.StartsWith(ContentType, StringComparison.OrdinalIgnoreCase);

    /// <summary>
    /// Whether a header is the protocol's own and so not custom metadata: pseudo-headers, the
    /// <c>grpc-</c> prefix, and the HTTP headers the mapping fixes.
    /// </summary>
    public static bool IsReservedHeader(string name) =>
        name.StartsWith(':')
        || name.StartsWith("grpc-", StringComparison.OrdinalIgnoreCase)
        || name.Equals("content-type", StringComparison.OrdinalIgnoreCase)
        || name.Equals("te", StringComparison.OrdinalIgnoreCase)
        || name.Equals("host", StringComparison.OrdinalIgnoreCase)
        || name.Equals("content-length", StringComparison.OrdinalIgnoreCase)
        || name.Equals("transfer-encoding", StringComparison.OrdinalIgnoreCase);

    /// <summary>The status a client reports for a response whose HTTP status is not 200 (PROTOCOL-HTTP2.md, "HTTP to gRPC Status Code Mapping").</summary>
    public static StatusCode FromHttpStatus(int httpStatus) => httpStatus switch
    {
        400 => StatusCode.Internal,
        401 => StatusCode.Unauthenticated,
        403 => StatusCode.PermissionDenied,
        404 => StatusCode.Unimplemented,
        429 or 502 or 503 or 504 => StatusCode.Unavailable,
        _ => StatusCode.Unknown,
    };

    /// <summary>The status a client reports when the server resets the stream (PROTOCOL-HTTP2.md, "Errors").</summary>
    public static StatusCode FromHttp2ErrorCode(long errorCode) => errorCode switch
    {
        0x7 => StatusCode.Unavailable,        // REFUSED_STREAM: not processed, safe to retry
        0x8 => StatusCode.Cancelled,          // CANCEL
        0xB => StatusCode.ResourceExhausted,  // ENHANCE_YOUR_CALM
        0xC => StatusCode.PermissionDenied,   // INADEQUATE_SECURITY
        _ => StatusCode.Internal,             // NO_ERROR, PROTOCOL_ERROR, INTERNAL_ERROR, FLOW_CONTROL_ERROR, ...
    };

    /// <summary>Parses a <c>grpc-status</c> value; anything that is not a number maps to UNKNOWN.</summary>
    public static StatusCode ParseStatus(string? value) =>
        int.TryParse(value, System.Globalization.NumberStyles.None, System.Globalization.CultureInfo.InvariantCulture, out var code)
            ? (StatusCode)code
            : StatusCode.Unknown;
}
