using System.Security.Cryptography.X509Certificates;
using Hyder.Client;
using Hyder.Security;
using Hyder.Testing;
using Xunit;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// One hyder-server over TLS (a PEM certificate from a test CA) with a keys file holding a reader, a
/// writer and an admin key, shared by the security tests of a class; stops with the class.
/// </summary>
public sealed class SecureServer : IAsyncLifetime
{
    private readonly TempDirectory _directory = new("hyder-host-tls-");

    internal ServerProcess Process { get; private set; } = null!;

    public X509Certificate2 Ca { get; } = TestCertificates.CreateCa("Hyder Host Test CA");

    public string CaPath { get; private set; } = null!;

    public string WrongCaPath { get; private set; } = null!;

    /// <summary>Name → token: reader, writer, admin, and a token no key matches ("wrong").</summary>
    public Dictionary<string, string> Tokens { get; } = new()
    {
        ["reader"] = ApiKeyStore.NewToken(),
        ["writer"] = ApiKeyStore.NewToken(),
        ["admin"] = ApiKeyStore.NewToken(),
        ["wrong"] = ApiKeyStore.NewToken(),
    };

    public string Directory => _directory.Path;

    public async Task InitializeAsync()
    {
        using var server = TestCertificates.Issue(Ca, "hyder-host", server: true, client: false);
        var (certPath, keyPath) = TestCertificates.WritePem(server, Directory, "server");
        CaPath = TestCertificates.WriteCaPem(Ca, Directory, "ca");
        using var wrong = TestCertificates.CreateCa("Not The Hyder CA");
        WrongCaPath = TestCertificates.WriteCaPem(wrong, Directory, "wrong-ca");
        var keysFile = Path.Combine(Directory, "keys");
        File.WriteAllLines(keysFile, ["# test keys"
            , ApiKeyStore.Line("reader-key", ClientRole.Reader, Tokens["reader"])
            , ApiKeyStore.Line("writer-key", ClientRole.Writer, Tokens["writer"])
            , ApiKeyStore.Line("admin-key", ClientRole.Admin, Tokens["admin"])]);
        Process = await ServerProcess.StartAsync(
            "--embedded", "--listen", "https://127.0.0.1:0", "--server-id", "secure",
            "--tls-certificate", certPath, "--tls-key", keyPath, "--keys-file", keysFile);
        Assert.Equal("https", Process.Address.Scheme);
    }

    /// <summary>A client trusting the test CA, with the named token (none for null); <paramref name="multiplex"/>: one-shot transactions go over <c>ExecuteStream</c>.</summary>
    internal HyderClient Client(string? token, bool multiplex = false) => new(new HyderClientSettings
    {
        Endpoint = Process.Address,
        Timeout = TimeSpan.FromSeconds(10),
        TrustedCertificateAuthorities = [Ca],
        Token = token,
        Multiplex = multiplex,
    });

    public async Task DisposeAsync()
    {
        await Process.DisposeAsync();
        Ca.Dispose();
        _directory.Dispose();
    }
}
