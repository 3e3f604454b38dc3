namespace Hyder.Rpc;

/// <summary>
/// Limits that keep one client from starving the others: connections, streams, header sizes and
/// timeouts. The message size limit is <see cref="RpcServerOptions.MaxReceiveMessageSize"/>.
/// Null turns a limit off.
/// </summary>
public sealed class RpcServerLimits
{
    /// <summary>Open connections from all clients, at most; more are closed at once. Default 4096.</summary>
    public int? MaxConnections { get; set; } = 4096;

    /// <summary>Open connections from one IP address, at most; more are closed at once. Default 256.</summary>
    public int? MaxConnectionsPerAddress { get; set; } = 256;

    /// <summary>Calls in flight on one HTTP/2 connection (SETTINGS_MAX_CONCURRENT_STREAMS). Default 100.</summary>
    public int MaxStreamsPerConnection { get; set; } = 100;

    /// <summary>The request headers of one call, in bytes, at most (and so any one header). Default 16 KiB.</summary>
    public int MaxHeaderBytes { get; set; } = 16 * 1024;

    /// <summary>A connection with no call in flight for this long is closed. Default 2 minutes.</summary>
    public TimeSpan IdleTimeout { get; set; } = TimeSpan.FromMinutes(2);

    /// <summary>A new connection must send its request headers within this time. Default 10 s.</summary>
    public TimeSpan RequestHeadersTimeout { get; set; } = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Slow requests: the request of a unary or server-streaming call (its message and the end of
    /// its stream) must arrive within this time from the call's start, and each message of a
    /// streaming call within this time from its first byte; otherwise the call ends with
    /// DEADLINE_EXCEEDED. A streaming call may wait as long as it likes between messages. Default 30 s.
    /// </summary>
    public TimeSpan? RequestTimeout { get; set; } = TimeSpan.FromSeconds(30);
}
