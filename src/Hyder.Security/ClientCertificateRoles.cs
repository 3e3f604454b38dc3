using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Hyder.Security;

/// <summary>
/// Roles of client certificates, by subject or by SHA-256 thumbprint. The certificate has already
/// passed the TLS handshake's validation against the configured client CA; this only names its role.
/// The text form of an entry is <c>ROLE SUBJECT</c> (the subject as .NET prints it, such as
/// <c>CN=alice, O=Example</c>) or <c>ROLE sha256:HEX</c>.
/// </summary>
public sealed class ClientCertificateRoles
{
    private const string ThumbprintPrefix = "sha256:";

    private readonly List<(string? Subject, byte[]? Thumbprint, ClientRole Role)> _entries = [];

    /// <summary>How many entries there are.</summary>
    public int Count => _entries.Count;

    /// <summary>Adds an entry from its text, <c>ROLE SUBJECT</c> or <c>ROLE sha256:HEX</c>.</summary>
    /// <param name="text">The entry.</param>
    /// <exception cref="FormatException">The text is malformed.</exception>
    public void AddLine(string text)
    {
        ArgumentNullException.ThrowIfNull(text);
        var trimmed = text.Trim();
        var space = trimmed.IndexOf(' ', StringComparison.Ordinal);
        if (space <= 0 || !ClientRoles.TryParse(trimmed[..space], out var role) || role == ClientRole.None)
        {
            throw new FormatException($"'{text}' is not ROLE SUBJECT or ROLE sha256:HEX (ROLE: {ClientRoles.Names}).");
        }

        var match = trimmed[(space + 1)..].Trim();
        if (match.StartsWith(ThumbprintPrefix, StringComparison.OrdinalIgnoreCase))
        {
            var hex = match[ThumbprintPrefix.Length..];
            if (hex.Length != 64 || !hex.All(char.IsAsciiHexDigit))
            {
                throw new FormatException($"'{match}': a thumbprint is sha256: and 64 hex digits.");
            }

            _entries.Add((null, Convert.FromHexString(hex), role));
        }
        else
        {
            _entries.Add((Normalize(match), null, role));
        }
    }

    /// <summary>The caller a certificate stands for, or null when no entry names it.</summary>
    /// <param name="certificate">The client's certificate.</param>
    /// <returns>The caller, named by the certificate's subject.</returns>
    public CallerIdentity? Find(X509Certificate2 certificate)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        var subject = Normalize(certificate.Subject);
        Span<byte> thumbprint = stackalloc byte[SHA256.HashSizeInBytes];
        SHA256.HashData(certificate.RawData, thumbprint);
        foreach (var (s, t, role) in _entries)
        {
            if ((s is not null && string.Equals(s, subject, StringComparison.OrdinalIgnoreCase))
                || (t is not null && thumbprint.SequenceEqual(t)))
            {
                return new CallerIdentity(certificate.Subject, role, CallerIdentity.CertificateScheme);
            }
        }

        return null;
    }

    /// <summary>The SHA-256 thumbprint of a certificate as an entry names it.</summary>
    /// <param name="certificate">The certificate.</param>
    /// <returns><c>sha256:</c> and 64 lowercase hex digits.</returns>
    public static string Thumbprint(X509Certificate2 certificate)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        return ThumbprintPrefix + Convert.ToHexStringLower(SHA256.HashData(certificate.RawData));
    }

    // "CN=a,O=b" and "CN=a, O=b" name the same subject.
    private static string Normalize(string subject) =>
        string.Join(", ", subject.Split(',', StringSplitOptions.TrimEntries | StringSplitOptions.RemoveEmptyEntries));
}
