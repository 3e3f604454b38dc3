using System.Security.Cryptography.X509Certificates;
using Microsoft.AspNetCore.Server.Kestrel.Https;

namespace Hyder.Server.Grpc;

/// <summary>TLS of a server endpoint: its certificate and, optionally, which client certificates it accepts.</summary>
public sealed class GrpcServerTls
{
    /// <summary>The server's certificate with its private key (see <see cref="Hyder.Security.RpcTls.LoadCertificate"/>).</summary>
    public required X509Certificate2 Certificate { get; init; }

    /// <summary>Intermediate CA certificates sent after <see cref="Certificate"/>; null: none.</summary>
    public X509Certificate2Collection? Intermediates { get; init; }

    /// <summary>
    /// The CAs client certificates must chain to (only these: not the system's store). Null: client
    /// certificates are not asked for.
    /// </summary>
    public X509Certificate2Collection? ClientCertificateAuthorities { get; init; }

    /// <summary>
    /// With <see cref="ClientCertificateAuthorities"/>: whether a client must present a certificate
    /// (<see cref="ClientCertificateMode.RequireCertificate"/>) or may (AllowCertificate, the default);
    /// a certificate that is presented is always validated, and one that does not chain to the CAs
    /// fails the handshake.
    /// </summary>
    public ClientCertificateMode ClientCertificateMode { get; init; } = ClientCertificateMode.AllowCertificate;
}
