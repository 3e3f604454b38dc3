using System.Text;
using Hyder.Client;
using Hyder.Testing;
using Xunit;

namespace Hyder.Server.Host.Tests;

/// <summary>hyder-server with a required client certificate: the CA, the subject and thumbprint roles, from the command line.</summary>
public sealed class ClientCertificateTests
{
    [Fact]
    public async Task RequiredClientCertificatesChainToTheClientCaAndCarryTheirRoles()
    {
        using var directory = new TempDirectory("hyder-host-mtls-");
        using var ca = TestCertificates.CreateCa("Hyder mTLS Test CA");
        using var otherCa = TestCertificates.CreateCa("Other CA");
        using var serverCertificate = TestCertificates.Issue(ca, "hyder-host", server: true, client: false);
        using var writer = TestCertificates.Issue(ca, "CN=app-1, O=Hyder Tests", server: false, client: true);
        using var reader = TestCertificates.Issue(ca, "app-2", server: false, client: true);
        using var foreign = TestCertificates.Issue(otherCa, "CN=app-1, O=Hyder Tests", server: false, client: true);
        var (certPath, keyPath) = TestCertificates.WritePem(serverCertificate, directory.Path, "server");
        var caPath = TestCertificates.WriteCaPem(ca, directory.Path, "ca");
        var (readerCert, readerKey) = TestCertificates.WritePem(reader, directory.Path, "reader");
        await using var server = await ServerProcess.StartAsync(
            "--embedded", "--listen", "https://127.0.0.1:0", "--tls-certificate", certPath, "--tls-key", keyPath,
            "--tls-client-ca", caPath, "--tls-client-certificates", "require",
            "--certificate-role", "writer CN=app-1, O=Hyder Tests",
            "--certificate-role", "reader " + Hyder.Security.ClientCertificateRoles.Thumbprint(reader));

        HyderClient Client(System.Security.Cryptography.X509Certificates.X509Certificate2? certificate) => new(new HyderClientSettings
        {
            Endpoint = server.Address,
            Timeout = TimeSpan.FromSeconds(10),
            TrustedCertificateAuthorities = [ca],
            ClientCertificate = certificate,
        });

        await using (var client = Client(writer))
        {
            await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Encoding.UTF8.GetBytes("mtls"), [1])]);
            var denied = await Assert.ThrowsAsync<HyderException>(() => client.CheckpointAsync());
            Assert.Equal(global::Grpc.Core.StatusCode.PermissionDenied, denied.StatusCode);
        }

        // The reader, from PEM files through the connection string.
        await using (var client = new HyderClient($"Endpoint={server.Address};TrustedCa={caPath};ClientCertificate={readerCert};ClientKey={readerKey}"))
        {
            Assert.Equal([1], (await client.ReadAsync([Encoding.UTF8.GetBytes("mtls")]))[0]);
            var denied = await Assert.ThrowsAsync<HyderException>(() => client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Delete(Encoding.UTF8.GetBytes("mtls"))]));
            Assert.Equal(global::Grpc.Core.StatusCode.PermissionDenied, denied.StatusCode);
        }

        foreach (var refused in new[] { foreign, null })
        {
            await using var client = Client(refused);
            var e = await Assert.ThrowsAsync<HyderException>(() => client.GetStatusAsync());
            Assert.Equal(global::Grpc.Core.StatusCode.Unavailable, e.StatusCode);
        }
    }
}
