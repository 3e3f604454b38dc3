using System.Net;
using Microsoft.AspNetCore.Server.Kestrel.Core;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Grpc;

/// <summary>Settings of a <see cref="HyderGrpcServer"/>.</summary>
public sealed class GrpcServerOptions
{
    /// <summary>Where the server listens; default 127.0.0.1 on a port the OS picks.</summary>
    public IPEndPoint EndPoint { get; set; } = new(IPAddress.Loopback, 0);

    /// <summary>TLS on the endpoint (h2 by ALPN); null: h2c with prior knowledge (cleartext).</summary>
    public GrpcServerTls? Tls { get; set; }

    /// <summary>Connection, stream, header and timeout limits.</summary>
    public GrpcServerLimits Limits { get; set; } = new();

    /// <summary>Who may call: every call is authenticated before its method runs. Null: no authentication (every caller is an admin).</summary>
    public ClientAuthenticator? Authenticator { get; set; }

    /// <summary>
    /// The largest request and response message, in bytes (Grpc.AspNetCore's MaxReceiveMessageSize and
    /// MaxSendMessageSize); a larger request is refused with RESOURCE_EXHAUSTED. Default 4 MiB.
    /// </summary>
    public int MaxMessageBytes { get; set; } = 4 * 1024 * 1024;

    /// <summary>Whether the server answers gRPC server reflection (grpc.reflection.v1 and v1alpha). Default false.</summary>
    public bool Reflection { get; set; }

    /// <summary>How long <see cref="HyderGrpcServer.StopAsync"/> lets calls in flight finish before it aborts them. Default 5 s.</summary>
    public TimeSpan ShutdownTimeout { get; set; } = TimeSpan.FromSeconds(5);

    /// <summary>Configures Kestrel further after this library's settings (tests).</summary>
    public Action<KestrelServerOptions>? ConfigureKestrel { get; set; }

    /// <summary>Where the server logs; none when null.</summary>
    public ILoggerFactory? LoggerFactory { get; set; }
}
