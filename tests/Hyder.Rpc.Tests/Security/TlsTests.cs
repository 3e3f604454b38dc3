using System.Security.Cryptography.X509Certificates;
using Hyder.Rpc.Security;
using Hyder.Testing;
using Microsoft.AspNetCore.Server.Kestrel.Https;
using Xunit;

namespace Hyder.Rpc.Tests.Security;

/// <summary>TLS on the server (h2 by ALPN) and the client's private CA and client certificate.</summary>
public sealed class TlsTests : IDisposable
{
    private readonly X509Certificate2 _ca = TestCertificates.CreateCa("Hyder Test CA");
    private readonly X509Certificate2 _otherCa = TestCertificates.CreateCa("Some Other CA");
    private readonly X509Certificate2 _serverCertificate;

    public TlsTests() => _serverCertificate = TestCertificates.Issue(_ca, "hyder-server", server: true, client: false);

    [Fact]
    public async Task AClientTrustingTheServersCaCallsOverH2()
    {
        await using var t = await StartAsync();
        using var channel = new RpcChannel(t.Server.Address, new RpcChannelOptions { TrustedCertificateAuthorities = [_ca] });
        Assert.Equal("https", t.Server.Address.Scheme);
        var reply = await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "over tls" });
        Assert.Equal("over tls", reply.Text);
    }

    [Fact]
    public async Task AClientTrustingAnotherCaFailsTheHandshake()
    {
        await using var t = await StartAsync();
        using var channel = new RpcChannel(t.Server.Address, new RpcChannelOptions { TrustedCertificateAuthorities = [_otherCa] });
        var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }));
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
    }

    [Fact]
    public async Task AClientTrustingOnlyTheSystemStoreFailsTheHandshake()
    {
        await using var t = await StartAsync();
        using var channel = new RpcChannel(t.Server.Address);
        var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }));
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
    }

    [Fact]
    public async Task APlaintextClientGetsNoAnswerFromATlsServer()
    {
        await using var t = await StartAsync();
        using var channel = new RpcChannel(new UriBuilder(t.Server.Address) { Scheme = "http" }.Uri);
        var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }));
        Assert.Equal(StatusCode.Unavailable, e.StatusCode);
    }

    [Fact]
    public async Task ARequiredClientCertificateMustChainToTheClientCa()
    {
        await using var t = await StartAsync(ClientCertificateMode.RequireCertificate);
        using var good = TestCertificates.Issue(_ca, "alice", server: false, client: true);
        using var foreign = TestCertificates.Issue(_otherCa, "mallory", server: false, client: true);
        using var serverOnly = TestCertificates.Issue(_ca, "not-a-client", server: true, client: false);

        using (var channel = Channel(t, good))
        {
            Assert.Equal("ok", (await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "ok" })).Text);
        }

        foreach (var refused in new[] { foreign, serverOnly, null })
        {
            using var channel = Channel(t, refused);
            var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "x" }));
            Assert.Equal(StatusCode.Unavailable, e.StatusCode);
        }
    }

    [Fact]
    public async Task ClientCertificatesGetTheirConfiguredRole()
    {
        using var writer = TestCertificates.Issue(_ca, "CN=writer-app, O=Hyder Tests", server: false, client: true);
        using var reader = TestCertificates.Issue(_ca, "reader-app", server: false, client: true);
        using var unknown = TestCertificates.Issue(_ca, "unknown-app", server: false, client: true);
        var roles = new ClientCertificateRoles();
        roles.AddLine("writer CN=writer-app,O=Hyder Tests");
        roles.AddLine("reader " + ClientCertificateRoles.Thumbprint(reader));
        await using var t = await StartAsync(ClientCertificateMode.AllowCertificate, o =>
        {
            o.Authenticator = new RpcAuthenticator { Certificates = roles };
            o.RequiredRole = method => method == EchoMethods.Unary.FullName ? ClientRole.Writer : ClientRole.Reader;
        });

        using (var channel = Channel(t, writer))
        {
            Assert.Equal("w", (await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "w" })).Text);
        }

        using (var channel = Channel(t, reader))
        {
            var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "r" }));
            Assert.Equal(StatusCode.PermissionDenied, e.StatusCode);
            Assert.Contains("writer role", e.Status.Detail, StringComparison.Ordinal);
        }

        using (var channel = Channel(t, unknown))
        {
            var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "u" }));
            Assert.Equal(StatusCode.PermissionDenied, e.StatusCode);
        }

        using (var channel = Channel(t, null))
        {
            var e = await Assert.ThrowsAsync<RpcException>(async () => await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "n" }));
            Assert.Equal(StatusCode.Unauthenticated, e.StatusCode);
        }
    }

    [Fact]
    public void PemCertificateAndKeyFilesLoadWithTheirKey()
    {
        using var directory = new TempDirectory("hyder-rpc-tls-");
        var (certPath, keyPath) = TestCertificates.WritePem(_serverCertificate, directory.Path, "server");
        var caPath = TestCertificates.WriteCaPem(_ca, directory.Path, "ca");
        using var loaded = RpcTls.LoadCertificate(certPath, keyPath);
        Assert.True(loaded.HasPrivateKey);
        Assert.Equal(_serverCertificate.Thumbprint, loaded.Thumbprint);
        var authorities = RpcTls.LoadCertificateAuthorities(caPath);
        Assert.True(RpcTls.IsTrusted(loaded, null, authorities, RpcTls.ServerAuthOid));
        Assert.False(RpcTls.IsTrusted(loaded, null, authorities, RpcTls.ClientAuthOid));
        Assert.Throws<System.Security.Cryptography.CryptographicException>(() => RpcTls.LoadCertificate(certPath, null));
        Assert.Throws<System.Security.Cryptography.CryptographicException>(() => RpcTls.LoadCertificateAuthorities(keyPath));
    }

    [Fact]
    public async Task AServerSendsTheIntermediatesThatFollowItsCertificateInThePemFile()
    {
        using var directory = new TempDirectory("hyder-rpc-chain-");
        using var intermediate = Intermediate(_ca, "Hyder Intermediate CA");
        using var leaf = TestCertificates.Issue(intermediate, "chained-server", server: true, client: false);
        var (certPath, keyPath) = TestCertificates.WritePem(leaf, directory.Path, "server");
        File.AppendAllText(certPath, intermediate.ExportCertificatePem() + "\n");
        using var loaded = RpcTls.LoadCertificate(certPath, keyPath);
        var intermediates = RpcTls.LoadIntermediates(certPath);
        Assert.Equal(intermediate.Thumbprint, Assert.Single(intermediates!).Thumbprint);

        foreach (var (sent, works) in new[] { (intermediates, true), (null, false) })
        {
            await using var t = await TestServer.StartAsync(o => o.Tls = new RpcServerTls { Certificate = loaded, Intermediates = sent });
            using var channel = new RpcChannel(t.Server.Address, new RpcChannelOptions { TrustedCertificateAuthorities = [_ca] });
            var call = async () => (await channel.UnaryCall(EchoMethods.Unary, new EchoRequest { Text = "chained" })).Text;
            if (works)
            {
                Assert.Equal("chained", await call());
            }
            else
            {
                Assert.Equal(StatusCode.Unavailable, (await Assert.ThrowsAsync<RpcException>(call)).StatusCode);
            }
        }
    }

    public void Dispose()
    {
        _serverCertificate.Dispose();
        _ca.Dispose();
        _otherCa.Dispose();
    }

    private static X509Certificate2 Intermediate(X509Certificate2 root, string name)
    {
        using var key = System.Security.Cryptography.ECDsa.Create(System.Security.Cryptography.ECCurve.NamedCurves.nistP256);
        var request = new CertificateRequest($"CN={name}", key, System.Security.Cryptography.HashAlgorithmName.SHA256);
        request.CertificateExtensions.Add(new X509BasicConstraintsExtension(true, true, 0, true));
        request.CertificateExtensions.Add(new X509KeyUsageExtension(X509KeyUsageFlags.KeyCertSign | X509KeyUsageFlags.CrlSign, true));
        request.CertificateExtensions.Add(new X509SubjectKeyIdentifierExtension(request.PublicKey, false));
        request.CertificateExtensions.Add(X509AuthorityKeyIdentifierExtension.CreateFromCertificate(root, true, false));
        var now = DateTimeOffset.UtcNow;
        using var signed = request.Create(root, now.AddMinutes(-30), now.AddHours(23), [1, 2, 3, 4]);
        using var withKey = signed.CopyWithPrivateKey(key);
        return X509CertificateLoader.LoadPkcs12(withKey.Export(X509ContentType.Pkcs12), null);
    }

    private RpcChannel Channel(TestServer t, X509Certificate2? clientCertificate) =>
        new(t.Server.Address, new RpcChannelOptions { TrustedCertificateAuthorities = [_ca], ClientCertificate = clientCertificate });

    private Task<TestServer> StartAsync(ClientCertificateMode? clients = null, Action<RpcServerOptions>? configure = null) =>
        TestServer.StartAsync(o =>
        {
            o.Tls = new RpcServerTls
            {
                Certificate = _serverCertificate,
                ClientCertificateAuthorities = clients is null ? null : [_ca],
                ClientCertificateMode = clients ?? ClientCertificateMode.AllowCertificate,
            };
            configure?.Invoke(o);
        });
}
