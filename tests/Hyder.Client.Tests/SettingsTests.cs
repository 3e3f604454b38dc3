using Hyder.Testing;
using Xunit;

namespace Hyder.Client.Tests;

public sealed class SettingsTests
{
    [Fact]
    public void ConnectionStringSetsEveryKey()
    {
        var s = HyderClientSettings.Parse("Endpoint=http://127.0.0.1:5000;Timeout=2.5;MaxRetries=7;RetryDelay=20;maxretrydelay=500;MaxMessageBytes=1048576");
        Assert.Equal(new Uri("http://127.0.0.1:5000"), s.Endpoint);
        Assert.Equal(TimeSpan.FromSeconds(2.5), s.Timeout);
        Assert.Equal(7, s.MaxRetries);
        Assert.Equal(TimeSpan.FromMilliseconds(20), s.RetryDelay);
        Assert.Equal(TimeSpan.FromMilliseconds(500), s.MaxRetryDelay);
        Assert.Equal(1048576, s.MaxMessageBytes);
    }

    [Fact]
    public void DefaultsAndNoTimeout()
    {
        var s = HyderClientSettings.Parse("Endpoint=https://hyder.example:443");
        Assert.Equal(TimeSpan.FromSeconds(30), s.Timeout);
        Assert.Equal(10, s.MaxRetries);
        Assert.Null(HyderClientSettings.Parse("Endpoint=http://h:1;Timeout=0").Timeout);
    }

    [Fact]
    public void ConnectionStringLoadsTheCaTheClientCertificateAndTheTokenAndNeverPrintsTheToken()
    {
        using var directory = new TempDirectory("hyder-client-tls-");
        using var ca = TestCertificates.CreateCa("Client Test CA");
        using var client = TestCertificates.Issue(ca, "app-1", server: false, client: true);
        var caPath = TestCertificates.WriteCaPem(ca, directory.Path, "ca");
        var (certPath, keyPath) = TestCertificates.WritePem(client, directory.Path, "client");
        const string token = "hyder_a-token-that-must-not-be-printed";
        var s = HyderClientSettings.Parse($"Endpoint=https://127.0.0.1:7400;TrustedCa={caPath};ClientCertificate={certPath};ClientKey={keyPath};Token={token}");
        Assert.Equal(ca.Thumbprint, Assert.Single(s.TrustedCertificateAuthorities!).Thumbprint);
        Assert.Equal(client.Thumbprint, s.ClientCertificate!.Thumbprint);
        Assert.True(s.ClientCertificate.HasPrivateKey);
        Assert.Equal(token, s.Token);
        Assert.DoesNotContain(token, s.ToString(), StringComparison.Ordinal);
        Assert.Contains("Token = ***", s.ToString(), StringComparison.Ordinal);

        var missingKey = Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse($"Endpoint=https://h:1;ClientCertificate={certPath}"));
        Assert.Contains("ClientCertificate=", missingKey.Message, StringComparison.Ordinal);
        Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse($"Endpoint=https://h:1;TrustedCa={keyPath}"));
        Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse($"Endpoint=https://h:1;TrustedCa={directory.Path}/missing.crt"));
        Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse($"Endpoint=https://h:1;ClientKey={keyPath}"));
    }

    [Theory]
    [InlineData("Timeout=30")]
    [InlineData("Endpoint=ftp://h:1")]
    [InlineData("Endpoint=http://h:1;Colour=blue")]
    [InlineData("Endpoint=http://h:1;MaxRetries=-1")]
    [InlineData("Endpoint=http://h:1;MaxRetries=1.5")]
    [InlineData("Endpoint=http://h:1;Timeout=soon")]
    public void BadConnectionStringsAreRefused(string connectionString) =>
        Assert.Throws<ArgumentException>(() => HyderClientSettings.Parse(connectionString));
}
