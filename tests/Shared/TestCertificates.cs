using System.Net;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Hyder.Testing;

/// <summary>
/// A throwaway CA and the certificates it issues, made in-process for TLS tests (ECDSA P-256,
/// valid from an hour ago for a day), and their PEM files for processes and configuration.
/// </summary>
internal static class TestCertificates
{
    /// <summary>A self-signed CA certificate with its private key.</summary>
    public static X509Certificate2 CreateCa(string name)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest($"CN={name}", key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, false, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, true));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, false));
        var now = DateTimeOffset.UtcNow;
        using var ca = request.CreateSelfSigned(now.AddHours(-1), now.AddDays(1));
        return Reload(ca);
    }

    /// <summary>
    /// A certificate for <paramref name="subject"/> (a common name, or a distinguished name with '=')
    /// signed by <paramref name="ca"/>: with the serverAuth usage and the names localhost, 127.0.0.1,
    /// ::1 and <paramref name="dnsNames"/> when <paramref name="server"/>; with clientAuth when <paramref name="client"/>.
    /// </summary>
    public static X509Certificate2 Issue(X509Certificate2 ca, string subject, bool server, bool client, params string[] dnsNames)
    {
        using var key = ECDsa.Create(ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest(subject.Contains('=', StringComparison.Ordinal) ? subject : $"CN={subject}", key, HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(false, false, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.DigitalSignature | X509KeyUsageFlags.KeyAgreement, true));
        var usages = new OidCollection();
        if (server)
        {
            usages.Add(new Oid("1.3.6.1.5.5.7.3.1"));
        }

        if (client)
        {
            usages.Add(new Oid("1.3.6.1.5.5.7.3.2"));
        }

        request.CertificateExtensions.Add(new X509EnhancedKeyUsageExtension(usages, false));
        if (server || dnsNames.Length > 0)
        {
            var names = new SubjectAlternativeNameBuilder();
            if (server)
            {
                names.AddDnsName("localhost");
                names.AddIpAddress(IPAddress.Loopback);
                names.AddIpAddress(IPAddress.IPv6Loopback);
            }

            foreach (var name in dnsNames)
            {
                names.AddDnsName(name);
            }

            request.CertificateExtensions.Add(names.Build());
        }

        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, false));
        request.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(ca, true, false));
        var serial = new byte[16];
        RandomNumberGenerator.Fill(serial);
        serial[0] &= 0x7F;
        var now = DateTimeOffset.UtcNow;
        using var issued = request.Create(ca, now.AddMinutes(-30), now.AddHours(23), serial);
        using var withKey = issued.CopyWithPrivateKey(key);
        return Reload(withKey);
    }

    /// <summary>Writes NAME.crt (the certificate) and NAME.key (its PKCS#8 private key) as PEM.</summary>
    public static (string CertPath, string KeyPath) WritePem(X509Certificate2 cert, string directory, string name)
    {
        var certPath = Path.Combine(directory, name + ".crt");
        var keyPath = Path.Combine(directory, name + ".key");
        File.WriteAllText(certPath, cert.ExportCertificatePem() + "\n");
        using var key = (AsymmetricAlgorithm?)cert.GetECDsaPrivateKey() ?? cert.GetRSAPrivateKey()
            ?? throw new InvalidOperationException($"{cert.Subject} has no private key to write.");
        File.WriteAllText(keyPath, key.ExportPkcs8PrivateKeyPem() + "\n");
        return (certPath, keyPath);
    }

    /// <summary>Writes the CA's certificate (no key) as NAME.crt, PEM; returns its path.</summary>
    public static string WriteCaPem(X509Certificate2 ca, string directory, string name)
    {
        var path = Path.Combine(directory, name + ".crt");
        File.WriteAllText(path, ca.ExportCertificatePem() + "\n");
        return path;
    }

    // A persisted-key copy: ephemeral keys from CopyWithPrivateKey do not work for SslStream everywhere.
    private static X509Certificate2 Reload(X509Certificate2 certificate) =>
        X509CertificateLoader.LoadPkcs12(certificate.Export(X509ContentType.Pkcs12), null);
}
