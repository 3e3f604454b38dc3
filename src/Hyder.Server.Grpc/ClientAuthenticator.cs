using Grpc.Core;
using Hyder.Security;
using Microsoft.AspNetCore.Http;

namespace Hyder.Server.Grpc;

/// <summary>
/// Establishes who makes each call, before any handler runs: an <c>authorization: Bearer TOKEN</c>
/// (or <c>x-api-key: TOKEN</c>) header checked against <see cref="ApiKeys"/>; else the client
/// certificate of the TLS connection, looked up in <see cref="Certificates"/>; else (no credentials,
/// or a certificate without a role), when
/// <see cref="AnonymousRole"/> is not <see cref="ClientRole.None"/>, an anonymous caller with that role.
/// Credentials that are present but wrong are refused even where anonymous callers are allowed.
/// </summary>
public sealed class ClientAuthenticator
{
    /// <summary>The header of a bearer token.</summary>
    public const string AuthorizationHeader = "authorization";

    /// <summary>The other header a token may come in.</summary>
    public const string ApiKeyHeader = "x-api-key";

    private const string BearerPrefix = "Bearer ";

    // The one anonymous caller (null: none allowed), made once rather than per call.
    private readonly CallerIdentity? _anonymous;

    /// <summary>The API keys.</summary>
    public ApiKeyStore ApiKeys { get; init; } = new();

    /// <summary>The roles of client certificates.</summary>
    public ClientCertificateRoles Certificates { get; init; } = new();

    /// <summary>The role of a caller with no credentials; <see cref="ClientRole.None"/> (the default) refuses them.</summary>
    public ClientRole AnonymousRole
    {
        get => _anonymous?.Role ?? ClientRole.None;
        init => _anonymous = value == ClientRole.None ? null : new CallerIdentity("anonymous", value, CallerIdentity.AnonymousScheme);
    }

    /// <summary>The caller, or a refusal (UNAUTHENTICATED or PERMISSION_DENIED) with a reason that holds no secret.</summary>
    /// <param name="context">The request.</param>
    /// <returns>The caller, or the status to end the call with.</returns>
    public AuthenticationResult Authenticate(HttpContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var headers = context.Request.Headers;
        var authorization = headers[AuthorizationHeader];
        var apiKey = headers[ApiKeyHeader];
        if (authorization.Count + apiKey.Count > 1)
        {
            return AuthenticationResult.Refuse(StatusCode.Unauthenticated, "More than one credential header; send one authorization or x-api-key header.");
        }

        if (authorization.Count == 1 || apiKey.Count == 1)
        {
            ReadOnlySpan<char> token;
            if (authorization.Count == 1)
            {
                var value = authorization[0] ?? string.Empty;
                if (!value.StartsWith(BearerPrefix, StringComparison.OrdinalIgnoreCase))
                {
                    return AuthenticationResult.Refuse(StatusCode.Unauthenticated, "The authorization header must be 'Bearer TOKEN'.");
                }

                token = value.AsSpan(BearerPrefix.Length).Trim();
            }
            else
            {
                token = (apiKey[0] ?? string.Empty).AsSpan().Trim();
            }

            return ApiKeys.Find(token) is { } caller
                ? AuthenticationResult.Accept(caller)
                : AuthenticationResult.Refuse(StatusCode.Unauthenticated, "Invalid API key.");
        }

        if (context.Connection.ClientCertificate is { } certificate)
        {
            // Kestrel validated the chain against the client CA during the handshake.
            if (Certificates.Find(certificate) is { } caller)
            {
                return AuthenticationResult.Accept(caller);
            }

            // A certificate without a role proves nothing more than no credentials would.
            if (AnonymousRole == ClientRole.None)
            {
                return AuthenticationResult.Refuse(StatusCode.PermissionDenied, $"The client certificate '{certificate.Subject}' has no role on this server.");
            }
        }

        return _anonymous is { } anonymous
            ? AuthenticationResult.Accept(anonymous)
            : AuthenticationResult.Refuse(StatusCode.Unauthenticated, "This server needs credentials: an authorization: Bearer TOKEN header or a client certificate.");
    }
}

/// <summary>What <see cref="ClientAuthenticator.Authenticate"/> decided.</summary>
/// <param name="Caller">The caller; null when refused.</param>
/// <param name="Refusal">The status to end the call with; OK when accepted.</param>
public readonly record struct AuthenticationResult(CallerIdentity? Caller, Status Refusal)
{
    /// <summary>An accepted caller.</summary>
    /// <param name="caller">The caller.</param>
    /// <returns>The result.</returns>
    public static AuthenticationResult Accept(CallerIdentity caller) => new(caller, Status.DefaultSuccess);

    /// <summary>A refusal.</summary>
    /// <param name="code">UNAUTHENTICATED or PERMISSION_DENIED.</param>
    /// <param name="detail">Why, with no secret in it.</param>
    /// <returns>The result.</returns>
    public static AuthenticationResult Refuse(StatusCode code, string detail) => new(null, new Status(code, detail));
}
