using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Authentication;
using System.Security.Cryptography;
using System.Security.Cryptography.X509Certificates;

namespace Hyder.Log.Transport;

/// <summary>
/// How cluster members talk to each other over TCP (log client ↔ log unit, sequencer and
/// projection store; transaction server ↔ transaction server for intention broadcast): mutual TLS
/// with certificates of one cluster CA, or plaintext when the operator chose it. With TLS each
/// side presents this member's certificate and accepts the other's only when it chains to the
/// cluster CA (<see cref="X509ChainTrustMode.CustomRootTrust"/>: the machine's trust store plays
/// no part) and carries the right extended key usage; a client also checks that the server's
/// certificate names the address it dialled. See docs/security.md.
/// </summary>
public sealed class TransportSecurity : IDisposable
{
    private static readonly Oid s_serverAuth = new("1.3.6.1.5.5.7.3.1", "Server Authentication");
    private static readonly Oid s_clientAuth = new("1.3.6.1.5.5.7.3.2", "Client Authentication");

    private readonly X509Certificate2Collection _ca;
    private readonly SslStreamCertificateContext? _context;
    private readonly bool _owned;

    private TransportSecurity(X509Certificate2? certificate, X509Certificate2Collection ca, X509Certificate2Collection? intermediates, bool owned)
    {
        Certificate = certificate;
        _ca = ca;
        _owned = owned;
        if (certificate is not null)
        {
            _context = SslStreamCertificateContext.Create(certificate, intermediates, offline: true);
        }
    }

    /// <summary>Plaintext: no TLS. For members that the operator configured so, tests and in-process tools.</summary>
    public static TransportSecurity Plaintext { get; } = new(null, [], null, owned: false);

    /// <summary>Whether connections use mutual TLS.</summary>
    public bool IsTls => Certificate is not null;

    /// <summary>This member's certificate (with its private key); null for plaintext.</summary>
    public X509Certificate2? Certificate { get; }

    /// <summary>How long a TLS handshake may take before the connection is dropped (default 5 s).</summary>
    public TimeSpan HandshakeTimeout { get; init; } = TimeSpan.FromSeconds(5);

    /// <summary>
    /// Mutual TLS with <paramref name="certificate"/> (which must hold its private key) as this
    /// member's identity, trusting only certificates issued by <paramref name="ca"/>. The caller
    /// keeps ownership of the certificates.
    /// </summary>
    public static TransportSecurity MutualTls(X509Certificate2 certificate, X509Certificate2Collection ca, TimeSpan? handshakeTimeout = null)
    {
        ArgumentNullException.ThrowIfNull(certificate);
        ArgumentNullException.ThrowIfNull(ca);
        if (!certificate.HasPrivateKey)
        {
            throw new ArgumentException($"The member certificate {certificate.Subject} has no private key.", nameof(certificate));
        }

        if (ca.Count == 0)
        {
            throw new ArgumentException("The cluster CA bundle holds no certificate.", nameof(ca));
        }

        return new TransportSecurity(certificate, ca, null, owned: false) { HandshakeTimeout = handshakeTimeout ?? TimeSpan.FromSeconds(5) };
    }

    /// <summary>
    /// Reads the cluster TLS settings as both hosts take them (<c>--cluster-tls-cert</c>,
    /// <c>--cluster-tls-key</c>, <c>--cluster-ca</c>, <c>--cluster-allow-plaintext</c>): TLS when
    /// the three files are given, plaintext only when explicitly allowed and no file is given.
    /// Anything else throws <see cref="ArgumentException"/> with a message naming the setting.
    /// </summary>
    public static TransportSecurity FromSettings(string? certificatePath, string? keyPath, string? caPath, bool allowPlaintext)
    {
        var given = (certificatePath is not null ? 1 : 0) + (keyPath is not null ? 1 : 0) + (caPath is not null ? 1 : 0);
        if (given == 0)
        {
            return allowPlaintext
                ? Plaintext
                : throw new ArgumentException(
                    "cluster traffic is unprotected: give --cluster-tls-cert, --cluster-tls-key and --cluster-ca (ClusterTls:Certificate, ClusterTls:Key, ClusterTls:Ca) for mutual TLS, "
                    + "or --cluster-allow-plaintext (ClusterTls:AllowPlaintext=true) to run without it.");
        }

        if (allowPlaintext)
        {
            throw new ArgumentException("--cluster-allow-plaintext (ClusterTls:AllowPlaintext) and the cluster TLS files are both given: choose one (a member speaks TLS or plaintext, not both).");
        }

        if (certificatePath is null || keyPath is null || caPath is null)
        {
            var missing = certificatePath is null ? "--cluster-tls-cert (ClusterTls:Certificate)"
                : keyPath is null ? "--cluster-tls-key (ClusterTls:Key)"
                : "--cluster-ca (ClusterTls:Ca)";
            throw new ArgumentException($"{missing} is missing: mutual TLS needs this member's certificate, its private key and the cluster CA, all PEM files.");
        }

        return Load(certificatePath, keyPath, caPath);
    }

    /// <summary>
    /// Loads this member's certificate (PEM, optionally followed by intermediate certificates),
    /// its private key (PEM, unencrypted) and the cluster CA bundle (PEM), and checks that the
    /// certificate chains to that CA; throws <see cref="ArgumentException"/> saying what is wrong.
    /// </summary>
    public static TransportSecurity Load(string certificatePath, string keyPath, string caPath)
    {
        var certificateText = ReadPem(certificatePath, "--cluster-tls-cert (ClusterTls:Certificate)");
        var keyText = ReadPem(keyPath, "--cluster-tls-key (ClusterTls:Key)");
        var caText = ReadPem(caPath, "--cluster-ca (ClusterTls:Ca)");
        var ca = new X509Certificate2Collection();
        X509Certificate2 certificate;
        var chain = new X509Certificate2Collection();
        try
        {
            ca.ImportFromPem(caText);
        }
        catch (CryptographicException e)
        {
            throw new ArgumentException($"--cluster-ca (ClusterTls:Ca): {Path.GetFullPath(caPath)} is not a PEM certificate bundle: {e.Message}");
        }

        if (ca.Count == 0)
        {
            throw new ArgumentException($"--cluster-ca (ClusterTls:Ca): {Path.GetFullPath(caPath)} holds no PEM certificate.");
        }

        try
        {
            certificate = X509Certificate2.CreateFromPem(certificateText, keyText);
            chain.ImportFromPem(certificateText);
        }
        catch (Exception e) when (e is CryptographicException or ArgumentException)
        {
            throw new ArgumentException($"--cluster-tls-cert/--cluster-tls-key (ClusterTls:Certificate, ClusterTls:Key): cannot load {Path.GetFullPath(certificatePath)} with the key {Path.GetFullPath(keyPath)} (PEM, unencrypted key matching the certificate): {e.Message}");
        }

        var intermediates = new X509Certificate2Collection();
        foreach (var extra in chain)
        {
            if (extra.Thumbprint != certificate.Thumbprint)
            {
                intermediates.Add(extra);
            }
        }

        if (Untrusted(certificate, ca, intermediates, usage: null) is { } problem)
        {
            var subject = certificate.Subject;
            certificate.Dispose();
            throw new ArgumentException($"--cluster-tls-cert (ClusterTls:Certificate): {Path.GetFullPath(certificatePath)} ({subject}) {problem} in {Path.GetFullPath(caPath)}.");
        }

        return new TransportSecurity(certificate, ca, intermediates, owned: true);
    }

    /// <summary>
    /// The server side of a new connection: the socket itself for plaintext, else a
    /// <see cref="SslStream"/> after a handshake that required a client certificate from the
    /// cluster CA. Throws <see cref="ClusterTlsException"/> (an <see cref="IOException"/>) naming
    /// <paramref name="remote"/> and the reason when the peer is refused or too slow.
    /// </summary>
    public async Task<Stream> AcceptAsync(Socket socket, string remote, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(socket);
        var network = new NetworkStream(socket, ownsSocket: true);
        if (!IsTls)
        {
            return network;
        }

        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(HandshakeTimeout);
        var ssl = new SslStream(network, leaveInnerStreamOpen: false);
        var check = new PeerCheck(this, expectedHost: null, s_clientAuth);
        try
        {
            // A TLS client's first byte is a handshake record (22); anything else is a plaintext
            // member talking to a TLS one, which deserves its own sentence in the log.
            var first = new byte[1];
            var peeked = await socket.ReceiveAsync(first, SocketFlags.Peek, timeout.Token).ConfigureAwait(false);
            if (peeked == 0)
            {
                throw new ClusterTlsException(remote, "closed the connection before the TLS handshake");
            }

            if (first[0] != 22)
            {
                throw new ClusterTlsException(remote, "speaks plaintext to this TLS listener (its first bytes are not a TLS handshake): configure it with the cluster TLS certificate");
            }

            await ssl.AuthenticateAsServerAsync(
                new SslServerAuthenticationOptions
                {
                    ServerCertificateContext = _context,
                    ClientCertificateRequired = true,
                    CertificateChainPolicy = Policy(s_clientAuth),
                    RemoteCertificateValidationCallback = check.Validate,
                },
                timeout.Token).ConfigureAwait(false);
            return ssl;
        }
        catch (Exception e) when (e is not ClusterTlsException)
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw Failure(remote, check, e, "client", cancellationToken);
        }
        catch
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw;
        }
    }

    /// <summary>
    /// The client side of a new connection to <paramref name="endPoint"/>: the socket itself for
    /// plaintext, else a <see cref="SslStream"/> after a handshake that presented this member's
    /// certificate and accepted the server's only from the cluster CA and naming the address
    /// dialled. Throws <see cref="ClusterTlsException"/> naming the endpoint and the reason.
    /// </summary>
    public async Task<Stream> ConnectAsync(Socket socket, IPEndPoint endPoint, CancellationToken cancellationToken)
    {
        ArgumentNullException.ThrowIfNull(socket);
        ArgumentNullException.ThrowIfNull(endPoint);
        var network = new NetworkStream(socket, ownsSocket: true);
        if (!IsTls)
        {
            return network;
        }

        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        timeout.CancelAfter(HandshakeTimeout);
        var ssl = new SslStream(network, leaveInnerStreamOpen: false);
        var host = endPoint.Address.ToString();
        var check = new PeerCheck(this, host, s_serverAuth);
        try
        {
            await ssl.AuthenticateAsClientAsync(
                new SslClientAuthenticationOptions
                {
                    TargetHost = host,
                    ClientCertificateContext = _context,
                    CertificateChainPolicy = Policy(s_serverAuth),
                    RemoteCertificateValidationCallback = check.Validate,
                },
                timeout.Token).ConfigureAwait(false);
            return ssl;
        }
        catch (Exception e)
        {
            await ssl.DisposeAsync().ConfigureAwait(false);
            throw Failure(endPoint.ToString(), check, e, "server", cancellationToken);
        }
    }

    /// <summary>Disposes the certificate when this instance loaded it.</summary>
    public void Dispose()
    {
        if (_owned)
        {
            Certificate?.Dispose();
            foreach (var ca in _ca)
            {
                ca.Dispose();
            }
        }
    }

    private static Exception Failure(string peer, PeerCheck check, Exception e, string role, CancellationToken cancellationToken)
    {
        if (e is OperationCanceledException && cancellationToken.IsCancellationRequested)
        {
            return e;
        }

        var reason = check.Refusal
            ?? e switch
            {
                OperationCanceledException => "did not complete the TLS handshake in time (a plaintext peer, or an overloaded one)",
                AuthenticationException when role == "server" => $"ended the TLS handshake: {e.Message} (it may have refused this member's certificate)",
                AuthenticationException => $"failed the TLS handshake: {e.Message}",
                IOException or SocketException when role == "server" => "closed the connection during the TLS handshake (is it serving plaintext, or did it refuse this member's certificate?)",
                _ => $"failed the TLS handshake: {e.Message}",
            };
        return new ClusterTlsException(peer, reason, e) { TimedOut = check.Refusal is null && e is OperationCanceledException };
    }

    private X509ChainPolicy Policy(Oid usage)
    {
        var policy = new X509ChainPolicy
        {
            TrustMode = X509ChainTrustMode.CustomRootTrust,

            // Cluster certificates are short-lived and replaced by the operator; no CRL or OCSP
            // endpoint is reachable from a cluster network, and a fetch would stall the handshake.
            RevocationMode = X509RevocationMode.NoCheck,
            DisableCertificateDownloads = true,
        };
        policy.CustomTrustStore.AddRange(_ca);
        policy.ApplicationPolicy.Add(usage);
        return policy;
    }

    /// <summary>Why <paramref name="certificate"/> is not a member's certificate of this CA, or null when it is.</summary>
    private static string? Untrusted(X509Certificate2 certificate, X509Certificate2Collection ca, X509Certificate2Collection? extra, Oid? usage)
    {
        using var chain = new X509Chain();
        chain.ChainPolicy.TrustMode = X509ChainTrustMode.CustomRootTrust;
        chain.ChainPolicy.RevocationMode = X509RevocationMode.NoCheck;
        chain.ChainPolicy.DisableCertificateDownloads = true;
        chain.ChainPolicy.CustomTrustStore.AddRange(ca);
        if (extra is not null)
        {
            chain.ChainPolicy.ExtraStore.AddRange(extra);
        }

        if (usage is not null)
        {
            chain.ChainPolicy.ApplicationPolicy.Add(usage);
        }

        return chain.Build(certificate) ? null : Describe(chain);
    }

    private static string Describe(X509Chain chain)
    {
        var flags = X509ChainStatusFlags.NoError;
        foreach (var status in chain.ChainStatus)
        {
            flags |= status.Status;
        }

        if ((flags & (X509ChainStatusFlags.UntrustedRoot | X509ChainStatusFlags.PartialChain)) != 0)
        {
            return "is not issued by the cluster CA";
        }

        if ((flags & X509ChainStatusFlags.NotTimeValid) != 0)
        {
            return "is expired or not yet valid";
        }

        if ((flags & X509ChainStatusFlags.NotValidForUsage) != 0)
        {
            return "lacks the extended key usage for this side of the connection";
        }

        return "does not chain to the cluster CA (" + string.Join(", ", chain.ChainStatus.Select(s => s.Status)) + ")";
    }

    /// <summary>A PEM file's text; a missing, unreadable or oversized file throws <see cref="ArgumentException"/> naming the setting.</summary>
    private static string ReadPem(string path, string setting)
    {
        const int MaxPemBytes = 1 << 20;
        var full = Path.GetFullPath(path);
        if (!File.Exists(full))
        {
            throw new ArgumentException($"{setting}: {full} does not exist.");
        }

        try
        {
            using var file = new FileStream(full, FileMode.Open, FileAccess.Read, FileShare.Read, 4096, FileOptions.None);
            var buffer = new byte[MaxPemBytes + 1];
            var length = 0;
            int read;
            while (length < buffer.Length && (read = file.Read(buffer, length, buffer.Length - length)) > 0)
            {
                length += read;
            }

            return length > MaxPemBytes
                ? throw new ArgumentException($"{setting}: {full} is larger than {MaxPemBytes} bytes; a PEM certificate, key or CA bundle is far smaller.")
                : System.Text.Encoding.UTF8.GetString(buffer, 0, length);
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            throw new ArgumentException($"{setting}: cannot read {full}: {e.Message}");
        }
    }

    /// <summary>One handshake's check of the peer's certificate, keeping the reason of a refusal for the error.</summary>
    private sealed class PeerCheck(TransportSecurity owner, string? expectedHost, Oid usage)
    {
        public string? Refusal { get; private set; }

        public bool Validate(object sender, X509Certificate? certificate, X509Chain? chain, SslPolicyErrors errors)
        {
            if (errors == SslPolicyErrors.None)
            {
                return true;
            }

            var side = expectedHost is null ? "client" : "server";
            if ((errors & SslPolicyErrors.RemoteCertificateNotAvailable) != 0 || certificate is null)
            {
                Refusal = $"presented no {side} certificate (mutual TLS requires one from the cluster CA)";
            }
            else if ((errors & SslPolicyErrors.RemoteCertificateChainErrors) != 0)
            {
                var what = chain is not null && chain.ChainStatus.Length > 0
                    ? Describe(chain)
                    : Untrusted(certificate as X509Certificate2 ?? X509CertificateLoader.LoadCertificate(certificate.GetRawCertData()), owner._ca, null, usage) ?? "does not chain to the cluster CA";
                Refusal = $"presented a {side} certificate ({certificate.Subject}) that {what}";
            }
            else
            {
                Refusal = $"presented a server certificate ({certificate.Subject}) that does not name {expectedHost} in its subject alternative names";
            }

            return false;
        }
    }
}

/// <summary>A cluster member's TLS handshake failed or was refused; the message names the peer and why.</summary>
public sealed class ClusterTlsException : IOException
{
    /// <summary>Creates the exception: <paramref name="peer"/> <paramref name="reason"/>.</summary>
    public ClusterTlsException(string peer, string reason, Exception? inner = null)
        : base($"Cluster TLS: {peer} {reason}.", inner)
    {
        Peer = peer;
        Reason = reason;
    }

    /// <summary>
    /// The handshake did not finish within its timeout: nothing was refused, the peer (or this
    /// host) may only be slow; a link retries.
    /// </summary>
    public bool TimedOut { get; init; }

    /// <summary>Creates the exception.</summary>
    public ClusterTlsException()
        : this("?", "failed")
    {
    }

    /// <summary>Creates the exception.</summary>
    public ClusterTlsException(string message)
        : this("?", message)
    {
    }

    /// <summary>Creates the exception.</summary>
    public ClusterTlsException(string message, Exception inner)
        : this("?", message, inner)
    {
    }

    /// <summary>The peer's address.</summary>
    public string Peer { get; } = "?";

    /// <summary>Why the handshake failed.</summary>
    public string Reason { get; } = "failed";
}
