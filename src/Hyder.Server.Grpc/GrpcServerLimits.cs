namespace Hyder.Server.Grpc;

/// <summary>
/// Limits that keep one client from starving the others: connections, streams, header sizes and
/// timeouts, applied as Kestrel's limits (and <see cref="ConnectionCap"/> per address). The message
/// size limit is <see cref="GrpcServerOptions.MaxMessageBytes"/>.
/// Null turns a limit off.
/// </summary>
public sealed class GrpcServerLimits
{
    /// <summary>Open connections from all clients, at most; more are closed at once. Default 4096.</summary>
    public int? MaxConnections { get; set; } = 4096;

    /// <summary>Open connections from one IP address, at most; more are closed at once. Default 256.</summary>
    public int? MaxConnectionsPerAddress { get; set; } = 256;

    /// <summary>Calls in flight on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS). Default 100.</summary>
    public int MaxStreamsPerConnection { get; set; } = 100;

    /// <summary>
    /// Transactions in flight on one <c>ExecuteStream</c> call, at most: the server reads the
    /// stream's next request only once one of them is answered (HTTP/2 flow control then holds the
    /// client back). Default 128.
    /// </summary>
    public int MaxTransactionsPerStream { get; set; } = 128;

    /// <summary>The request headers of one call, in bytes, at most (and so any one header). Default 16 KiB.</summary>
    public int MaxHeaderBytes { get; set; } = 16 * 1024;

    /// <summary>A connection with no call in flight for this long is closed. Default 2 minutes.</summary>
    public TimeSpan IdleTimeout { get; set; } = TimeSpan.FromMinutes(2);

    /// <summary>A new connection must send its request headers within this time. Default 10 s.</summary>
    public TimeSpan RequestHeadersTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Slow requests: a unary or server-streaming call's request must keep arriving at Kestrel's
    /// minimum body data rate (240 bytes/s) once this grace period has passed, or the call is cut
    /// off. Grpc.AspNetCore lifts the rate for client-streaming and duplex calls (Transact), whose
    /// requests may pause as long as they like between messages. Default 30 s (at least 2 s: Kestrel
    /// needs a grace period over 1 s); null turns the minimum rate off.
    /// </summary>
    public TimeSpan? RequestTimeout { get; set; } = TimeSpan.FromSeconds(30);
}
