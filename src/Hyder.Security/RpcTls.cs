using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Hyder.Security;

/// <summary>Loading certificates from files and checking chains against a private CA, for both ends of a channel.</summary>
public static class RpcTls
{
    /// <summary>The serverAuth extended key usage.</summary>
    public const string ServerAuthOid = "1.3.6.1.5.5.7.3.1";

    /// <summary>The clientAuth extended key usage.</summary>
    public const string ClientAuthOid = "1.3.6.1.5.5.7.3.2";

    /// <summary>
    /// Loads a certificate with its private key: PKCS#12 (<c>.pfx</c>, <c>.p12</c>) with an optional
    /// password, or PEM: the certificate file and the key file (PKCS#8, or PKCS#1 RSA / SEC1 EC), the
    /// key in the certificate file itself when <paramref name="keyPath"/> is null, encrypted when a
    /// password is given.
    /// </summary>
    /// <param name="certificatePath">The certificate file.</param>
    /// <param name="keyPath">The PEM key file; null: the key is in the certificate file (or the PKCS#12 file).</param>
    /// <param name="password">The PKCS#12 or encrypted PEM key's password; null: none.</param>
    /// <returns>The certificate, usable by SslStream on every platform.</returns>
    /// <exception cref="CryptographicException">A file does not hold what it should; the message says which.</exception>
    public static X509Certificate2 LoadCertificate(string certificatePath, string? keyPath = null, string? password = null)
    {
        ArgumentNullException.ThrowIfNull(certificatePath);
        if (IsPkcs12(certificatePath))
        {
            if (keyPath is not null)
            {
                throw new CryptographicException($"{certificatePath} is PKCS#12 and holds its own key; a separate key file is for PEM certificates.");
            }

            return X509CertificateLoader.LoadPkcs12FromFile(certificatePath, password);
        }

        using var pem = password is null
            ? X509Certificate2.CreateFromPemFile(certificatePath, keyPath)
            : X509Certificate2.CreateFromEncryptedPemFile(certificatePath, password, keyPath);
        if (!pem.HasPrivateKey)
        {
            throw new CryptographicException($"{keyPath ?? certificatePath} holds no private key for {certificatePath}.");
        }

        // A PEM key is ephemeral; SslStream on Windows needs a key it can persist, which PKCS#12 gives.
        return X509CertificateLoader.LoadPkcs12(pem.Export(X509ContentType.Pkcs12), null);
    }

    /// <summary>The certificates after the first in a PEM file: the intermediates a server sends after its own; null for a PKCS#12 file or when there are none.</summary>
    /// <param name="certificatePath">The server's certificate file.</param>
    /// <returns>The intermediates, or null.</returns>
    public static X509Certificate2Collection? LoadIntermediates(string certificatePath)
    {
        ArgumentNullException.ThrowIfNull(certificatePath);
        if (IsPkcs12(certificatePath))
        {
            return null;
        }

        var all = new X509Certificate2Collection();
        all.ImportFromPemFile(certificatePath);
        if (all.Count <= 1)
        {
            return null;
        }

        var intermediates = new X509Certificate2Collection();
        for (var i = 1; i < all.Count; i++)
        {
            intermediates.Add(all[i]);
        }

        return intermediates;
    }

    /// <summary>Loads every certificate of a PEM bundle (a CA, or several).</summary>
    /// <param name="path">The PEM file.</param>
    /// <returns>The certificates; at least one.</returns>
    /// <exception cref="CryptographicException">The file holds no certificate.</exception>
    public static X509Certificate2Collection LoadCertificateAuthorities(string path)
    {
        ArgumentNullException.ThrowIfNull(path);
        var collection = new X509Certificate2Collection();
        collection.ImportFromPemFile(path);
        return collection.Count > 0 ? collection : throw new CryptographicException($"{path} holds no PEM certificate.");
    }

    /// <summary>
    /// Whether a peer's certificate chains to one of <paramref name="authorities"/> (and to nothing
    /// else: the system's store is not consulted), is within its validity period, and allows
    /// <paramref name="usageOid"/>. Revocation is not checked.
    /// </summary>
    /// <param name="certificate">The peer's certificate.</param>
    /// <param name="intermediates">Certificates the peer sent along; may be null.</param>
    /// <param name="authorities">The trusted roots.</param>
    /// <param name="usageOid"><see cref="ServerAuthOid"/> or <see cref="ClientAuthOid"/>.</param>
    /// <returns>Whether the certificate is trusted.</returns>
    public static bool IsTrusted(X509Certificate2 certificate, X509Chain? intermediates, X509Certificate2Collection authorities, string usageOid)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        ArgumentNullException.ThrowIfNull(authorities);
        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.CustomTrustStore.AddRange(authorities);
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        chain.ChainPolicy.ApplicationPolicy.Add(new Oid(usageOid));
        if (intermediates is not null)
        {
            foreach (var element in intermediates.ChainElements)
            {
                chain.ChainPolicy.ExtraStore.Add(element.Certificate);
            }
        }

        return chain.Build(certificate);
    }

    private static bool IsPkcs12(string path) =>
        Path.GetExtension(path).ToUpperInvariant() is ".PFX" or ".P12";
}
