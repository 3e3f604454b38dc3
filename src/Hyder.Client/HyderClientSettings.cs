using System.Data.Common;
using System.Globalization;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;
using Hyder.Security;

namespace Hyder.Client;

/// <summary>
/// How a <see cref="HyderClient"/> reaches its server: the address, the per-call timeout and the
/// retry policy of <see cref="HyderClient.ReadWriteAsync(Func{HyderTransaction, Task}, IsolationLevel, CancellationToken)"/>.
/// </summary>
public sealed record HyderClientSettings
{
    /// <summary>The server's address, such as <c>http://127.0.0.1:5000</c> (h2c) or an <c>https://</c> one.</summary>
    public required Uri Endpoint { get; init; }

    /// <summary>
    /// The deadline of each call, from its start; for an interactive transaction and for a scan it
    /// covers the whole stream. Null: no deadline. Default 30 s.
    /// </summary>
    public TimeSpan? Timeout { get; init; } = TimeSpan.FromSeconds(30);

    /// <summary>How many times the retry helper runs an aborted transaction again. Default 10.</summary>
    public int MaxRetries { get; init; } = 10;

    /// <summary>The first retry's backoff; it doubles per retry, with jitter. Default 10 ms.</summary>
    public TimeSpan RetryDelay { get; init; } = TimeSpan.FromMilliseconds(10);

    /// <summary>The longest backoff between retries. Default 1 s.</summary>
    public TimeSpan MaxRetryDelay { get; init; } = TimeSpan.FromSeconds(1);

    /// <summary>The largest message sent or received, bytes. Default 4 MiB (the server's default).</summary>
    public int MaxMessageBytes { get; init; } = 4 * 1024 * 1024;

    /// <summary>
    /// For an <c>https</c> endpoint: the CAs the server's certificate must chain to instead of the
    /// system's store (a private CA). Null: the system's store.
    /// </summary>
    public X509Certificate2Collection? TrustedCertificateAuthorities { get; init; }

    /// <summary>For an <c>https</c> endpoint: the certificate, with its key, presented when the server asks for one.</summary>
    public X509Certificate2? ClientCertificate { get; init; }

    /// <summary>
    /// Read your writes (docs/api.md): the client sends the highest ordinal it has seen committed
    /// or read at (<see cref="HyderClient.Session"/>) with every transaction, read and scan, and
    /// the server waits until it has melded that ordinal before it takes its snapshot. A client
    /// whose calls reach several servers (or clients sharing a <see cref="Session"/>) then never
    /// reads a state older than its own last commit. Costs nothing on a server that has melded
    /// the ordinal already; on one that lags, the call waits for it (at most the server's limit,
    /// then UNAVAILABLE, which reads and begins retry). Default true; connection string key
    /// <c>ReadYourWrites=false</c> turns it off.
    /// </summary>
    public bool ReadYourWrites { get; init; } = true;

    /// <summary>
    /// The causal token the client keeps (see <see cref="ReadYourWrites"/>); null (the default):
    /// each client makes its own. Give clients of different servers one session to make each read
    /// see every commit any of them learned of.
    /// </summary>
    public HyderSession? Session { get; init; }

    /// <summary>
    /// One-shot transactions (<see cref="HyderClient.ExecuteAsync"/>) travel on one shared
    /// <c>ExecuteStream</c> call instead of a unary call each: the per-call costs of HTTP/2 and
    /// gRPC on both sides are paid once per stream (docs/benchmarks/rpc.md). The stream opens with
    /// the first transaction and again after it breaks. Each transaction's deadline is
    /// <see cref="Timeout"/>, enforced by the server. Interactive transactions, reads and scans
    /// are unchanged. Default false; connection string key <c>Multiplex=true</c>.
    /// </summary>
    public bool Multiplex { get; init; }

    /// <summary>
    /// Pipelined operations of an interactive transaction that are queued together (reads issued in
    /// a loop; the writes and the commit behind them) travel as one <c>batch</c> message of the
    /// <c>Transact</c> stream, and come back as one: the per-message costs of gRPC on both sides
    /// are paid once per batch (docs/api.md, "Batches in Transact"). The operations still run one
    /// by one, in order, on the server. A server older than the batch message refuses it
    /// (INVALID_ARGUMENT, "unexpected an empty request"): set this false for one. Default true;
    /// connection string key <c>BatchOperations=false</c>.
    /// </summary>
    public bool BatchOperations { get; init; } = true;

    /// <summary>An API key sent as <c>authorization: Bearer TOKEN</c> on every call; null: none. Never printed.</summary>
    public string? Token { get; init; }

    /// <summary>
    /// Parses a connection string such as <c>Endpoint=http://127.0.0.1:5000;Timeout=30;MaxRetries=10</c>.
    /// Keys (case-insensitive): <c>Endpoint</c> (required), <c>Timeout</c> (seconds; 0: none),
    /// <c>MaxRetries</c>, <c>RetryDelay</c> and <c>MaxRetryDelay</c> (milliseconds), <c>MaxMessageBytes</c>,
    /// <c>TrustedCa</c> (a PEM file of CAs), <c>ClientCertificate</c> and <c>ClientKey</c> (PEM files;
    /// the key may be in the certificate's file, or a .pfx without ClientKey), <c>Token</c> (an API key),
    /// <c>ReadYourWrites</c>, <c>Multiplex</c> and <c>BatchOperations</c> (<c>true</c> or <c>false</c>).
    /// </summary>
    /// <param name="connectionString">The connection string.</param>
    /// <returns>The settings.</returns>
    /// <exception cref="ArgumentException">A key is unknown, a value malformed, or the endpoint missing.</exception>
    public static HyderClientSettings Parse(string connectionString)
    {
        ArgumentNullException.ThrowIfNull(connectionString);
        var builder = new DbConnectionStringBuilder();
        try
        {
            builder.ConnectionString = connectionString;
        }
        catch (ArgumentException e)
        {
            throw new ArgumentException($"Malformed connection string: {e.Message}", nameof(connectionString), e);
        }

        Uri? endpoint = null;
        string? certificateFile = null;
        string? keyFile = null;
        var settings = new HyderClientSettings { Endpoint = new Uri("http://127.0.0.1") };
        foreach (string key in builder.Keys)
        {
            var value = Convert.ToString(builder[key], CultureInfo.InvariantCulture) ?? string.Empty;
            switch (key.ToUpperInvariant())
            {
                case "ENDPOINT":
                    if (!Uri.TryCreate(value, UriKind.Absolute, out endpoint) || (endpoint.Scheme != Uri.UriSchemeHttp && endpoint.Scheme != Uri.UriSchemeHttps))
                    {
                        throw new ArgumentException($"Endpoint '{value}' is not an http:// or https:// address.", nameof(connectionString));
                    }

                    break;
                case "TIMEOUT":
                    var seconds = Number(key, value, 0);
                    settings = settings with { Timeout = seconds == 0 ? null : TimeSpan.FromSeconds(seconds) };
                    break;
                case "MAXRETRIES":
                    settings = settings with { MaxRetries = (int)Number(key, value, 0, int.MaxValue) };
                    break;
                case "RETRYDELAY":
                    settings = settings with { RetryDelay = TimeSpan.FromMilliseconds(Number(key, value, 0)) };
                    break;
                case "MAXRETRYDELAY":
                    settings = settings with { MaxRetryDelay = TimeSpan.FromMilliseconds(Number(key, value, 0)) };
                    break;
                case "MAXMESSAGEBYTES":
                    settings = settings with { MaxMessageBytes = (int)Number(key, value, 1, int.MaxValue) };
                    break;
                case "TRUSTEDCA":
                    settings = settings with { TrustedCertificateAuthorities = Load(key, value, RpcTls.LoadCertificateAuthorities) };
                    break;
                case "CLIENTCERTIFICATE":
                    certificateFile = value;
                    break;
                case "CLIENTKEY":
                    keyFile = value;
                    break;
                case "READYOURWRITES":
                    settings = settings with { ReadYourWrites = bool.TryParse(value, out var on) ? on : throw new ArgumentException($"{key}={value} is not true or false.", nameof(connectionString)) };
                    break;
                case "MULTIPLEX":
                    settings = settings with { Multiplex = bool.TryParse(value, out var multiplex) ? multiplex : throw new ArgumentException($"{key}={value} is not true or false.", nameof(connectionString)) };
                    break;
                case "BATCHOPERATIONS":
                    settings = settings with { BatchOperations = bool.TryParse(value, out var batch) ? batch : throw new ArgumentException($"{key}={value} is not true or false.", nameof(connectionString)) };
                    break;
                case "TOKEN":
                    settings = settings with { Token = value.Length > 0 ? value : null };
                    break;
                default:
                    throw new ArgumentException($"Unknown connection string key '{key}'.", nameof(connectionString));
            }
        }

        if (keyFile is not null && certificateFile is null)
        {
            throw new ArgumentException("ClientKey is given without ClientCertificate.", nameof(connectionString));
        }

        if (certificateFile is not null)
        {
            settings = settings with { ClientCertificate = Load("ClientCertificate", certificateFile, path => RpcTls.LoadCertificate(path, keyFile)) };
        }

        return endpoint is null
            ? throw new ArgumentException("The connection string has no Endpoint.", nameof(connectionString))
            : settings with { Endpoint = endpoint };
    }

    /// <summary>The settings without secrets: the token shows as <c>***</c>, certificates by subject.</summary>
    /// <returns>The text.</returns>
    public override string ToString() =>
        string.Create(CultureInfo.InvariantCulture, $"HyderClientSettings {{ Endpoint = {Endpoint}, Timeout = {Timeout}, MaxRetries = {MaxRetries}, RetryDelay = {RetryDelay}, MaxRetryDelay = {MaxRetryDelay}, MaxMessageBytes = {MaxMessageBytes}, ReadYourWrites = {ReadYourWrites}, Multiplex = {Multiplex}, ")
        + $"TrustedCertificateAuthorities = {(TrustedCertificateAuthorities is null ? "system" : string.Join("; ", TrustedCertificateAuthorities.Select(c => c.Subject)))}, "
        + $"ClientCertificate = {ClientCertificate?.Subject ?? "none"}, Token = {(Token is null ? "none" : "***")} }}";

    private static T Load<T>(string key, string path, Func<string, T> load)
    {
        try
        {
            return load(path);
        }
        catch (Exception e) when (e is CryptographicException or IOException or UnauthorizedAccessException or ArgumentException)
        {
            throw new ArgumentException($"{key}={path}: {e.Message}", nameof(path), e);
        }
    }

    private static double Number(string key, string value, double min, double max = double.MaxValue) =>
        double.TryParse(value, NumberStyles.Float, CultureInfo.InvariantCulture, out var n) && n >= min && n <= max && (max != int.MaxValue || n == Math.Floor(n))
            ? n
            : throw new ArgumentException($"{key}={value} is not a number in [{min}, {max}].", nameof(value));
}
