namespace Hyder.Security;

/// <summary>
/// Who made a call, as the server established it from its credentials: a name for logs
/// (never a secret), the role, and how the caller proved it.
/// </summary>
/// <param name="Name">The key's or certificate's configured name, or <c>anonymous</c>.</param>
/// <param name="Role">What the caller may do.</param>
/// <param name="Scheme">How: <see cref="ApiKeyScheme"/>, <see cref="CertificateScheme"/> or <see cref="AnonymousScheme"/>.</param>
public sealed record CallerIdentity(string Name, ClientRole Role, string Scheme)
{
    /// <summary>A bearer token or API key.</summary>
    public const string ApiKeyScheme = "api-key";

    /// <summary>A client certificate from the TLS handshake.</summary>
    public const string CertificateScheme = "certificate";

    /// <summary>No credentials, where the server gives anonymous callers a role.</summary>
    public const string AnonymousScheme = "anonymous";
}
