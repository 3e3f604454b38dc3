namespace Hyder.Rpc;

/// <summary>Settings of a client channel.</summary>
public sealed class RpcChannelOptions
{
    /// <summary>The largest response message accepted; a larger one fails the call with RESOURCE_EXHAUSTED. Default 4 MiB.</summary>
    public int MaxReceiveMessageSize { get; set; } = GrpcProtocol.DefaultMaxReceiveMessageSize;

    /// <summary>The largest request message sent; a larger one fails the call with RESOURCE_EXHAUSTED. Default: no limit.</summary>
    public int MaxSendMessageSize { get; set; } = int.MaxValue;

    /// <summary>
    /// The HTTP handler; when null the channel makes a <see cref="SocketsHttpHandler"/>. Pass one
    /// to set TLS options (an <c>https</c> address negotiates h2 by ALPN), proxies or connection limits.
    /// </summary>
    public HttpMessageHandler? HttpHandler { get; set; }

    /// <summary>Whether disposing the channel disposes <see cref="HttpHandler"/>. Default true.</summary>
    public bool DisposeHttpHandler { get; set; } = true;
}
