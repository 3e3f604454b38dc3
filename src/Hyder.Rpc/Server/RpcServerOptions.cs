using System.Net;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Hyder.Rpc.Security;
using Microsoft.Extensions.Logging;

namespace Hyder.Rpc;

/// <summary>Settings of a gRPC server.</summary>
public sealed class RpcServerOptions
{
    /// <summary>Where <see cref="RpcServer"/> listens; default 127.0.0.1 on a port the OS picks.</summary>
    public IPEndPoint EndPoint { get; set; } = new(IPAddress.Loopback, 0);

    /// <summary>
    /// Configures the endpoint after it is set to HTTP/2 only. Without TLS the endpoint speaks
    /// h2c with prior knowledge; for TLS call <c>listen.UseHttps(certificate)</c> here, and Kestrel
    /// negotiates <c>h2</c> by ALPN.
    /// </summary>
    public Action<ListenOptions>? ConfigureEndpoint { get; set; }

    /// <summary>TLS on the endpoint (h2 by ALPN); null: h2c (cleartext).</summary>
    public RpcServerTls? Tls { get; set; }

    /// <summary>Connection, stream, header and timeout limits.</summary>
    public RpcServerLimits Limits { get; set; } = new();

    /// <summary>Who may call: every call is authenticated before its handler runs. Null: no authentication (every caller may call every method).</summary>
    public RpcAuthenticator? Authenticator { get; set; }

    /// <summary>
    /// The role each method (by full name) needs; a caller below it gets PERMISSION_DENIED. Used with
    /// <see cref="Authenticator"/>; null: every authenticated caller may call every method.
    /// </summary>
    public Func<string, ClientRole>? RequiredRole { get; set; }

    /// <summary>Configures Kestrel further (limits, HTTP/2 settings) after this library's settings.</summary>
    public Action<KestrelServerOptions>? ConfigureKestrel { get; set; }

    /// <summary>The largest request message accepted; larger ones end the call with RESOURCE_EXHAUSTED. Default 4 MiB.</summary>
    public int MaxReceiveMessageSize { get; set; } = GrpcProtocol.DefaultMaxReceiveMessageSize;

    /// <summary>The largest response message sent; a larger one ends the call with RESOURCE_EXHAUSTED. Default: no limit.</summary>
    public int MaxSendMessageSize { get; set; } = int.MaxValue;

    /// <summary>Whether an unexpected handler exception's text goes to the client in <c>grpc-message</c>. Default false.</summary>
    public bool IncludeExceptionDetails { get; set; }

    /// <summary>How long <see cref="RpcServer.StopAsync"/> lets calls in flight finish before it aborts them. Default 5 s.</summary>
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Where the server logs; none when null.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }
}
