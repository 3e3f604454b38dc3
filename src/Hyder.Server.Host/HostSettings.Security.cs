using System.Net;
using System.Security.Cryptography;
using Hyder.Server.Grpc;
using Hyder.Security;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Microsoft.Extensions.Configuration;

namespace Hyder.Server.Host;

/// <summary>The client API's TLS, authentication and limits (docs/security.md).</summary>
internal sealed partial class HostSettings
{
    /// <summary>
    /// TLS from the certificate (PEM with its key file, or PKCS#12) and the optional client CA.
    /// Cleartext is refused on an address other than loopback unless <c>--allow-plaintext</c>.
    /// </summary>
    private static GrpcServerTls? ReadTls(IConfiguration c, IPEndPoint listen, bool https)
    {
        var certificate = Text(c, SettingKeys.TlsCertificate);
        var key = Text(c, SettingKeys.TlsKey);
        var clientCa = Text(c, SettingKeys.TlsClientCa);
        var clientMode = Text(c, SettingKeys.TlsClientCertificates);
        var allowPlaintext = Bool(c, SettingKeys.AllowPlaintext, false);
        if (!https)
        {
            if (certificate is not null)
            {
                throw Bad(SettingKeys.Listen, "a --tls-certificate is given but the address is http://; use https://HOST:PORT.");
            }

            foreach (var (name, value) in new[] { (SettingKeys.TlsKey, key), (SettingKeys.TlsClientCa, clientCa), (SettingKeys.TlsClientCertificates, clientMode) })
            {
                if (value is not null)
                {
                    throw Bad(name, "is a TLS setting, and the --listen address is http://; use https://HOST:PORT with --tls-certificate.");
                }
            }

            if (!IPAddress.IsLoopback(listen.Address) && !allowPlaintext)
            {
                throw Bad(SettingKeys.Listen, $"http://{listen} would serve clients in cleartext beyond this machine: use https:// with --tls-certificate, or add --allow-plaintext on a network you trust.");
            }

            return null;
        }

        if (certificate is null)
        {
            throw Bad(SettingKeys.TlsCertificate, "an https --listen address needs a certificate: --tls-certificate server.crt --tls-key server.key (PEM), or --tls-certificate server.pfx.");
        }

        var mode = clientMode switch
        {
            null or "allow" => ClientCertificateMode.AllowCertificate,
            "require" => ClientCertificateMode.RequireCertificate,
            _ => throw Bad(SettingKeys.TlsClientCertificates, $"'{clientMode}' is not allow or require."),
        };
        if (clientMode is not null && clientCa is null)
        {
            throw Bad(SettingKeys.TlsClientCertificates, "client certificates are checked against --tls-client-ca, which is not given.");
        }

        var server = Load(SettingKeys.TlsCertificate, certificate, path => RpcTls.LoadCertificate(path, key is null ? null : Existing(SettingKeys.TlsKey, key), Text(c, SettingKeys.TlsPassword)));
        var authorities = clientCa is null ? null : Load(SettingKeys.TlsClientCa, clientCa, RpcTls.LoadCertificateAuthorities);
        var intermediates = Load(SettingKeys.TlsCertificate, certificate, RpcTls.LoadIntermediates);
        return new GrpcServerTls { Certificate = server, Intermediates = intermediates, ClientCertificateAuthorities = authorities, ClientCertificateMode = mode };
    }

    /// <summary>
    /// API keys (<c>NAME ROLE sha256:HEX</c>, from <c>--api-key</c> / Auth:Keys and <c>--keys-file</c>),
    /// client certificate roles, and the anonymous role. With no credentials configured, anonymous
    /// callers are admins on a loopback address (a development server) and a configuration error
    /// elsewhere unless <c>--anonymous</c> says what they may do.
    /// </summary>
    private static ClientAuthenticator ReadAuthenticator(IConfiguration c, IPEndPoint listen, bool clientCertificates)
    {
        var keys = new ApiKeyStore();
        foreach (var line in List(c, SettingKeys.ApiKeys))
        {
            Parse(SettingKeys.ApiKeys, () => keys.AddLine(line));
        }

        if (Text(c, SettingKeys.KeysFile) is { } file)
        {
            var path = Existing(SettingKeys.KeysFile, file);
            Parse(SettingKeys.KeysFile, () => keys.AddFile(path));
        }

        var certificates = new ClientCertificateRoles();
        foreach (var line in List(c, SettingKeys.CertificateRoles))
        {
            Parse(SettingKeys.CertificateRoles, () => certificates.AddLine(line));
        }

        if (certificates.Count > 0 && !clientCertificates)
        {
            throw Bad(SettingKeys.CertificateRoles, "client certificates are only asked for with an https --listen address and --tls-client-ca.");
        }

        ClientRole anonymous;
        if (Text(c, SettingKeys.Anonymous) is { } text)
        {
            if (!ClientRoles.TryParse(text, out anonymous, allowNone: true))
            {
                throw Bad(SettingKeys.Anonymous, $"'{text}' is not none, reader, writer or admin.");
            }
        }
        else if (keys.Count > 0 || certificates.Count > 0)
        {
            anonymous = ClientRole.None;
        }
        else if (IPAddress.IsLoopback(listen.Address))
        {
            anonymous = ClientRole.Admin;
        }
        else
        {
            throw Bad(SettingKeys.Anonymous, $"no credentials are configured and {listen} is reachable from other machines: add API keys (--api-key or --keys-file; hyder-server keys new makes one) or --certificate-role, or say --anonymous admin to let every caller do everything.");
        }

        return new ClientAuthenticator { ApiKeys = keys, Certificates = certificates, AnonymousRole = anonymous };
    }

    private static GrpcServerLimits ReadLimits(IConfiguration c)
    {
        var defaults = new GrpcServerLimits();
        var maxConnections = Int(c, SettingKeys.MaxConnections, defaults.MaxConnections ?? 0, 0, int.MaxValue);
        var perAddress = Int(c, SettingKeys.MaxConnectionsPerAddress, defaults.MaxConnectionsPerAddress ?? 0, 0, int.MaxValue);
        var requestTimeout = Int(c, SettingKeys.RequestTimeout, (int)(defaults.RequestTimeout?.TotalSeconds ?? 0), 0, 86_400);
        return new GrpcServerLimits
        {
            MaxConnections = maxConnections == 0 ? null : maxConnections,
            MaxConnectionsPerAddress = perAddress == 0 ? null : perAddress,
            MaxStreamsPerConnection = Int(c, SettingKeys.MaxStreamsPerConnection, defaults.MaxStreamsPerConnection, 1, 100_000),
            MaxTransactionsPerStream = Int(c, SettingKeys.MaxTransactionsPerStream, defaults.MaxTransactionsPerStream, 1, 100_000),
            MaxHeaderBytes = Int(c, SettingKeys.MaxHeaderBytes, defaults.MaxHeaderBytes, 1024, 1 << 20),
            IdleTimeout = TimeSpan.FromSeconds(Int(c, SettingKeys.IdleTimeout, (int)defaults.IdleTimeout.TotalSeconds, 1, 86_400)),
            RequestHeadersTimeout = TimeSpan.FromSeconds(Int(c, SettingKeys.RequestHeadersTimeout, (int)defaults.RequestHeadersTimeout.TotalSeconds, 1, 3_600)),
            RequestTimeout = requestTimeout == 0 ? null : TimeSpan.FromSeconds(requestTimeout),
        };
    }

    /// <summary>A list setting: a JSON array (or --option repeated), or one string separated by ';'.</summary>
    private static List<string> List(IConfiguration c, string key)
    {
        var section = c.GetSection(key);
        var texts = section.Value is { Length: > 0 } joined
            ? joined.Split(';', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries)
            : section.GetChildren().Select(s => s.Value?.Trim()).OfType<string>().Where(s => s.Length > 0);
        return [.. texts];
    }

    private static string Existing(string key, string path) =>
        File.Exists(path) ? path : throw Bad(key, $"{Path.GetFullPath(path)} does not exist.");

    private static T Load<T>(string key, string path, Func<string, T> load)
    {
        Existing(key, path);
        try
        {
            return load(path);
        }
        catch (Exception e) when (e is CryptographicException or IOException or UnauthorizedAccessException or ArgumentException)
        {
            throw Bad(key, $"{Path.GetFullPath(path)}: {e.Message}");
        }
    }

    private static void Parse(string key, Action add)
    {
        try
        {
            add();
        }
        catch (FormatException e)
        {
            throw Bad(key, e.Message);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw Bad(key, e.Message);
        }
    }
}
