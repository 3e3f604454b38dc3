using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Hyder.Testing;

/// <summary>
/// Certificates made in-process for TLS tests: a CA, certificates it issues (with their private
/// keys) and PEM files of both, as operators would hand them to the hosts. ECDSA P-256 keys,
/// valid from an hour ago for thirty days.
/// </summary>
internal static class TestCertificates
{
    private static readonly Oid s_serverAuth = new("1.3.6.1.5.5.7.3.1");
    private static readonly Oid s_clientAuth = new("1.3.6.1.5.5.7.3.2");

    /// <summary>A self-signed CA named <c>CN=<paramref name="name"/></c>, with its private key.</summary>
    public static X509Certificate2 CreateCa(string name)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest($"CN={name}", key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: true, hasPathLengthConstraint: true, pathLengthConstraint: 0, critical: true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, critical: true));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, critical: false));
        var now = DateTimeOffset.UtcNow;
        return request.CreateSelfSigned(now.AddHours(-1), now.AddDays(30));
    }

    /// <summary>
    /// A certificate for <c>CN=<paramref name="subject"/></c> issued by <paramref name="ca"/>, with
    /// its private key. <paramref name="server"/>: the serverAuth usage and subject alternative
    /// names localhost and 127.0.0.1 (an IP address entry); <paramref name="client"/>: the
    /// clientAuth usage; <paramref name="dnsNames"/> are added as further DNS names.
    /// </summary>
    public static X509Certificate2 Issue(X509Certificate2 ca, string subject, bool server, bool client, params string[] dnsNames)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest($"CN={subject}", key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(certificateAuthority: false, hasPathLengthConstraint: false, pathLengthConstraint: 0, critical: true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature | X509KeyUsageFlags.KeyAgreement, critical: true));
        var usages = new OidCollection();
        if (server)
        {
            usages.Add(s_serverAuth);
        }

        if (client)
        {
            usages.Add(s_clientAuth);
        }

        if (usages.Count > 0)
        {
            request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension(usages, critical: false));
        }

        var names = new SubjectAlternativeNameBuilder();
        var any = false;
        if (server)
        {
            names.AddDnsName("localhost");
            names.AddIpAddress(IPAddress.Loopback);
            any = true;
        }

        foreach (var dns in dnsNames)
        {
            names.AddDnsName(dns);
            any = true;
        }

        if (any)
        {
            request.CertificateExtensions.Add(names.Build());
        }

        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, critical: false));
        request.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(ca, includeKeyIdentifier: true, includeIssuerAndSerial: false));
        var serial = new byte[16];
        RandomNumberGenerator.Fill(serial);
        serial[0] &= 0x7F;
        var now = DateTimeOffset.UtcNow;
        using var issued = request.Create(ca, now.AddMinutes(-30), now.AddDays(29), serial);
        return issued.CopyWithPrivateKey(key);
    }

    /// <summary>Writes <paramref name="cert"/> and its private key (PKCS#8) as <c>NAME.crt</c> and <c>NAME.key</c> PEM files.</summary>
    public static (string CertPath, string KeyPath) WritePem(X509Certificate2 cert, string directory, string name)
    {
        var certPath = Path.Combine(directory, name + ".crt");
        var keyPath = Path.Combine(directory, name + ".key");
        File.WriteAllText(certPath, cert.ExportCertificatePem());
        using var key = (AsymmetricAlgorithm?)cert.GetECDsaPrivateKey() ?? cert.GetRSAPrivateKey()
            ?? throw new ArgumentException($"{cert.Subject} has no private key.", nameof(cert));
        File.WriteAllText(keyPath, key.ExportPkcs8PrivateKeyPem());
        return (certPath, keyPath);
    }

    /// <summary>Writes the CA's certificate (no key) as <c>NAME.crt</c>, a one-certificate bundle.</summary>
    public static string WriteCaPem(X509Certificate2 ca, string directory, string name)
    {
        var path = Path.Combine(directory, name + ".crt");
        File.WriteAllText(path, ca.ExportCertificatePem());
        return path;
    }
}
