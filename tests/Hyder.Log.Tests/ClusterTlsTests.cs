using System.Diagnostics;
using System.Net;
using System.Net.Security;
using System.Net.Sockets;
using System.Security.Cryptography.X509Certificates;
using Hyder.Log.Client;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Transport;
using Hyder.Log.Units;
using Hyder.Testing;
using Microsoft.Extensions.Logging;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>
/// Mutual TLS between log clients and log servers: the right CA works both ways; a certificate of
/// another CA, no certificate, or plaintext on one side is refused at once, with the reason named.
/// </summary>
public sealed class ClusterTlsTests : IDisposable
{
    // Long, so a test that fails only after the handshake timeout shows it did not fail fast.
    private static readonly TimeSpan s_handshake = TimeSpan.FromSeconds(30);
    private static readonly TimeSpan s_fast = TimeSpan.FromSeconds(10);

    private readonly X509Certificate2 _ca = TestCertificates.CreateCa("hyder-test-cluster-ca");
    private readonly X509Certificate2 _otherCa = TestCertificates.CreateCa("hyder-test-other-ca");
    private readonly X509Certificate2 _unitCert;
    private readonly X509Certificate2 _clientCert;
    private readonly X509Certificate2 _strangerCert;

    public ClusterTlsTests()
    {
        _unitCert = TestCertificates.Issue(_ca, "log-unit-1", server: true, client: true);
        _clientCert = TestCertificates.Issue(_ca, "server-1", server: true, client: true);
        _strangerCert = TestCertificates.Issue(_otherCa, "intruder", server: true, client: true);
    }

    public void Dispose()
    {
        foreach (var cert in new[] { _ca, _otherCa, _unitCert, _clientCert, _strangerCert })
        {
            cert.Dispose();
        }
    }

    private TransportSecurity Tls(X509Certificate2 cert) => TransportSecurity.MutualTls(cert, [_ca], s_handshake);

    private static LogServer Serve(LogUnit unit, TransportSecurity security, ILogger? logger = null)
    {
        var server = new LogServer(new IPEndPoint(IPAddress.Loopback, 0), unit, new Sequencer(), new MemoryProjectionStore(), logger, security: security);
        server.Start();
        return server;
    }

    [Fact]
    public async Task ALogClientAndAUnitOverMutualTlsAppendReadAndTakeTokens()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 1024 });
        await using var server = Serve(unit, Tls(_unitCert));
        await using var connector = new TcpConnector(1024, security: Tls(_clientCert));
        var endpoint = server.LocalEndPoint.ToString();
        var remote = connector.Unit(endpoint);
        var block = Enumerable.Range(0, 1000).Select(i => (byte)(i * 7)).ToArray();
        Assert.Equal(LogStatus.Ok, (await remote.WriteAsync(1, 3, block)).Status);
        var buffer = new byte[1024];
        Assert.Equal(new UnitReply(LogStatus.Ok, 1000), await remote.ReadAsync(1, 3, buffer));
        Assert.Equal(block, buffer[..1000]);

        // Many requests in flight over the one TLS connection.
        var writes = Enumerable.Range(10, 500).Select(a => remote.WriteAsync(1, a, BitConverter.GetBytes(a)).AsTask()).ToArray();
        Assert.All(await Task.WhenAll(writes), r => Assert.Equal(LogStatus.Ok, r.Status));
        Assert.Equal(new UnitReply(LogStatus.Ok, 4), await remote.ReadAsync(1, 321, buffer));
        Assert.Equal(321, BitConverter.ToInt32(buffer));

        var sequencer = connector.Sequencer(endpoint);
        Assert.Equal(LogStatus.Ok, (await sequencer.ResetAsync(1, 600)).Status);
        Assert.Equal(600, (await sequencer.NextAsync(1, 1)).Address);

        await using var store = new RemoteProjectionStore(endpoint, Tls(_clientCert));
        Assert.Null(await store.GetLatestAsync());
        Assert.Equal(0, server.RefusedConnections);
    }

    [Fact]
    public async Task AUnitRefusesAClientWhoseCertificateComesFromAnotherCa()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        var log = new ListLogger();
        await using var server = Serve(unit, Tls(_unitCert), log);

        // The stranger trusts the cluster CA (it may have stolen the CA certificate, which is public).
        await using var connector = new TcpConnector(256, security: TransportSecurity.MutualTls(_strangerCert, [_ca], s_handshake));
        var clock = Stopwatch.StartNew();
        await Assert.ThrowsAsync<UnitUnreachableException>(async () => await connector.Unit(server.LocalEndPoint.ToString()).WriteAsync(0, 0, new byte[8]));
        Assert.True(clock.Elapsed < s_fast, $"refused after {clock.Elapsed}");
        await WaitForAsync(() => server.RefusedConnections == 1);
        Assert.Contains(log.Lines, l => l.Contains("intruder", StringComparison.Ordinal) && l.Contains("is not issued by the cluster CA", StringComparison.Ordinal));
        Assert.Equal(LogStatus.Unwritten, (await unit.ReadAsync(0, 0, new byte[256])).Status);
    }

    [Fact]
    public async Task AClientRefusesAUnitWhoseCertificateComesFromAnotherCa()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        await using var server = Serve(unit, TransportSecurity.MutualTls(_strangerCert, [_ca, _otherCa], s_handshake));
        await using var connector = new TcpConnector(256, security: Tls(_clientCert));
        var clock = Stopwatch.StartNew();
        var e = await Assert.ThrowsAsync<UnitUnreachableException>(async () => await connector.Unit(server.LocalEndPoint.ToString()).WriteAsync(0, 0, new byte[8]));
        Assert.True(clock.Elapsed < s_fast, $"refused after {clock.Elapsed}");
        Assert.Contains("presented a server certificate (CN=intruder) that is not issued by the cluster CA", e.Message, StringComparison.Ordinal);
        Assert.Equal(LogStatus.Unwritten, (await unit.ReadAsync(0, 0, new byte[256])).Status);
    }

    [Fact]
    public async Task AClientRefusesAUnitWhoseCertificateDoesNotNameTheAddressItDialled()
    {
        // The unit's certificate names localhost and 127.0.0.1; it listens on 127.0.0.2 (loopback too).
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        var server = new LogServer(new IPEndPoint(IPAddress.Parse("127.0.0.2"), 0), unit, security: Tls(_unitCert));
        await using var _ = server;
        server.Start();
        await using var connector = new TcpConnector(256, security: Tls(_clientCert));
        var e = await Assert.ThrowsAsync<UnitUnreachableException>(async () => await connector.Unit(server.LocalEndPoint.ToString()).WriteAsync(0, 0, new byte[8]));
        Assert.Contains("(CN=log-unit-1) that does not name 127.0.0.2 in its subject alternative names", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public async Task AUnitRefusesATlsClientThatPresentsNoCertificate()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        var log = new ListLogger();
        await using var server = Serve(unit, Tls(_unitCert), log);
        using var socket = new Socket(AddressFamily.InterNetwork, SocketType.Stream, ProtocolType.Tcp);
        await socket.ConnectAsync(server.LocalEndPoint);
        await using var ssl = new SslStream(new NetworkStream(socket, ownsSocket: false));
        var clock = Stopwatch.StartNew();

        // The server's certificate is fine for this client; it has none of its own to show.
        var failed = false;
        try
        {
            await ssl.AuthenticateAsClientAsync(new SslClientAuthenticationOptions
            {
                TargetHost = "127.0.0.1",
                CertificateChainPolicy = new X509ChainPolicy
                {
                    TrustMode = X509ChainTrustMode.CustomRootTrust,
                    CustomTrustStore = { _ca },
                    RevocationMode = X509RevocationMode.NoCheck,
                },
            });
            await ssl.WriteAsync(new byte[32]);
            await ssl.FlushAsync();

            // TLS 1.3 finishes the client's handshake before the server checks its certificate:
            // the refusal arrives as the end of the stream.
            failed = await ssl.ReadAsync(new byte[64]) == 0;
        }
        catch (Exception e) when (e is IOException or System.Security.Authentication.AuthenticationException)
        {
            failed = true;
        }

        Assert.True(failed);
        Assert.True(clock.Elapsed < s_fast, $"refused after {clock.Elapsed}");
        await WaitForAsync(() => server.RefusedConnections == 1);
        Assert.Contains(log.Lines, l => l.Contains("presented no client certificate", StringComparison.Ordinal));
    }

    [Fact]
    public async Task APlaintextClientToATlsUnitFailsFast()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        var log = new ListLogger();
        await using var server = Serve(unit, Tls(_unitCert), log);
        await using var connector = new TcpConnector(256, security: TransportSecurity.Plaintext);
        var clock = Stopwatch.StartNew();
        await Assert.ThrowsAsync<UnitUnreachableException>(async () => await connector.Unit(server.LocalEndPoint.ToString()).WriteAsync(0, 0, new byte[8]));
        Assert.True(clock.Elapsed < s_fast, $"refused after {clock.Elapsed}");
        await WaitForAsync(() => server.RefusedConnections == 1);
        Assert.Contains(log.Lines, l => l.Contains("speaks plaintext to this TLS listener", StringComparison.Ordinal));
        Assert.Equal(LogStatus.Unwritten, (await unit.ReadAsync(0, 0, new byte[256])).Status);
    }

    [Fact]
    public async Task ATlsClientToAPlaintextUnitFailsFast()
    {
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        await using var server = Serve(unit, TransportSecurity.Plaintext);
        await using var connector = new TcpConnector(256, security: Tls(_clientCert));
        var clock = Stopwatch.StartNew();
        var e = await Assert.ThrowsAsync<UnitUnreachableException>(async () => await connector.Unit(server.LocalEndPoint.ToString()).WriteAsync(0, 0, new byte[8]));
        Assert.True(clock.Elapsed < s_fast, $"refused after {clock.Elapsed}");
        Assert.Contains("closed the connection during the TLS handshake (is it serving plaintext", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void SettingsLoadPemFilesAndNameWhatIsMissingOrWrong()
    {
        using var dir = new TempDirectory();
        var (cert, key) = TestCertificates.WritePem(_unitCert, dir.Path, "unit");
        var ca = TestCertificates.WriteCaPem(_ca, dir.Path, "ca");
        var otherCa = TestCertificates.WriteCaPem(_otherCa, dir.Path, "other-ca");

        using (var loaded = TransportSecurity.FromSettings(cert, key, ca, allowPlaintext: false))
        {
            Assert.True(loaded.IsTls);
            Assert.Equal(_unitCert.Thumbprint, loaded.Certificate!.Thumbprint);
        }

        Assert.False(TransportSecurity.FromSettings(null, null, null, allowPlaintext: true).IsTls);
        Assert.Contains("--cluster-allow-plaintext", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(null, null, null, allowPlaintext: false)).Message, StringComparison.Ordinal);
        Assert.Contains("choose one", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(cert, key, ca, allowPlaintext: true)).Message, StringComparison.Ordinal);
        Assert.StartsWith("--cluster-tls-key (ClusterTls:Key) is missing", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(cert, null, ca, allowPlaintext: false)).Message, StringComparison.Ordinal);
        Assert.StartsWith("--cluster-ca (ClusterTls:Ca) is missing", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(cert, key, null, allowPlaintext: false)).Message, StringComparison.Ordinal);
        Assert.Contains("does not exist", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(cert, key, Path.Combine(dir.Path, "nope.crt"), allowPlaintext: false)).Message, StringComparison.Ordinal);
        Assert.Contains("is not issued by the cluster CA", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(cert, key, otherCa, allowPlaintext: false)).Message, StringComparison.Ordinal);

        // A key that is not the certificate's.
        var (_, strangerKey) = TestCertificates.WritePem(_strangerCert, dir.Path, "stranger");
        Assert.Contains("cannot load", Assert.Throws<ArgumentException>(() => TransportSecurity.FromSettings(cert, strangerKey, ca, allowPlaintext: false)).Message, StringComparison.Ordinal);
    }

    private static async Task WaitForAsync(Func<bool> condition)
    {
        var deadline = Stopwatch.StartNew();
        while (!condition())
        {
            Assert.True(deadline.Elapsed < s_fast, "condition not reached in time");
            await Task.Delay(10);
        }
    }

    /// <summary>Keeps every formatted log line.</summary>
    private sealed class ListLogger : ILogger
    {
        private readonly List<string> _lines = [];

        public IReadOnlyList<string> Lines
        {
            get
            {
                lock (_lines)
                {
                    return [.. _lines];
                }
            }
        }

        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            lock (_lines)
            {
                _lines.Add(formatter(state, exception));
            }
        }
    }
}
