using System.Security.Cryptography.X509Certificates;

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

    /// <summary>
    /// For an <c>https</c> address: the CAs the server's certificate must chain to, instead of the
    /// system's store (a private CA's PEM: <see cref="Security.RpcTls.LoadCertificateAuthorities"/>).
    /// Null: the system's store. Ignored when <see cref="HttpHandler"/> is given.
    /// </summary>
    public X509Certificate2Collection? TrustedCertificateAuthorities { get; set; }

    /// <summary>
    /// For an <c>https</c> address: the certificate (with its private key) this client presents when
    /// the server asks for one (<see cref="Security.RpcTls.LoadCertificate"/>). Ignored when <see cref="HttpHandler"/> is given.
    /// </summary>
    public X509Certificate2? ClientCertificate { get; set; }

    /// <summary>
    /// A token sent as <c>authorization: Bearer TOKEN</c> on every call (a call's own authorization
    /// header wins). Null: none. Kept out of <see cref="object.ToString"/> and every log line.
    /// </summary>
    public string? BearerToken { get; set; }

    /// <summary>Whether disposing the channel disposes <see cref="HttpHandler"/>. Default true.</summary>
    public bool DisposeHttpHandler { get; set; } = true;
}
