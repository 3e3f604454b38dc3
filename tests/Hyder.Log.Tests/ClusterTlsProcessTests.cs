using Hyder.Log.Client;
using Hyder.Log.Transport;
using Hyder.Testing;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>
/// Log host processes configured for mutual TLS as an operator would (PEM files on the command
/// line): bootstrap, appends and reads work; a plaintext admin command is refused with the reason;
/// a host given neither TLS nor plaintext exits with code 2.
/// </summary>
public sealed class ClusterTlsProcessTests
{
    [Fact]
    public async Task ALogClusterOverMutualTlsBootstrapsAppendsAndReads()
    {
        using var dir = new TempDirectory();
        using var ca = TestCertificates.CreateCa("hyder-test-cluster-ca");
        var caPath = TestCertificates.WriteCaPem(ca, dir.Path, "ca");
        string[] Member(string name)
        {
            using var cert = TestCertificates.Issue(ca, name, server: true, client: true);
            var (certPath, keyPath) = TestCertificates.WritePem(cert, dir.Path, name);
            return ["--cluster-tls-cert", certPath, "--cluster-tls-key", keyPath, "--cluster-ca", caPath];
        }

        var control = Member("control");
        await using var controlHost = await HostProcess.StartAsync(["--role", "projection,sequencer", "--data", dir.Sub("control"), "--port", "0", .. control]);
        await using var unitHost = await HostProcess.StartAsync(["--role", "unit", "--data", dir.Sub("u1"), "--port", "0", .. Member("unit")]);
        Assert.Contains("mutual TLS", controlHost.Output, StringComparison.Ordinal);
        var spec = $"tcp:{controlHost.Endpoint}";
        var boot = await HostProcess.RunAsync(["admin", "--projection-store", spec, "bootstrap", "--block-size", "1024",
            "--sequencer", controlHost.Endpoint, "--chain", unitHost.Endpoint, .. Member("admin")]);
        Assert.True(boot.ExitCode == 0, boot.Output);

        using var cert = TestCertificates.Issue(ca, "client", server: false, client: true);
        var security = TransportSecurity.MutualTls(cert, [ca]);
        await using var store = new RemoteProjectionStore(controlHost.Endpoint, security);
        await using var connector = new TcpConnector(1024, security: security);
        await using var log = await LogClient.ConnectAsync(store, connector);
        var addresses = new List<long>();
        for (var i = 0; i < 20; i++)
        {
            addresses.Add(await log.AppendAsync(BitConverter.GetBytes(i * 31)));
        }

        var buffer = new byte[1024];
        for (var i = 0; i < addresses.Count; i++)
        {
            Assert.Equal(new LogRead(LogEntryKind.Data, 4), await log.ReadAsync(addresses[i], buffer));
            Assert.Equal(i * 31, BitConverter.ToInt32(buffer));
        }

        // An admin command that speaks plaintext to the TLS cluster gets a reason, not a hang.
        var plain = await HostProcess.RunAsync("admin", "--projection-store", spec, "show", "--cluster-allow-plaintext");
        Assert.Equal(1, plain.ExitCode);
        Assert.Contains($"Log server {controlHost.Endpoint} is unreachable", plain.Output, StringComparison.Ordinal);
        Assert.Contains("speaks plaintext to this TLS listener", controlHost.Output, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("--cluster-allow-plaintext", "--cluster-allow-plaintext", "false")]
    [InlineData("--cluster-tls-key (ClusterTls:Key) is missing", "--cluster-tls-cert", "member.crt")]
    [InlineData("does not exist", "--cluster-tls-cert", "member.crt", "--cluster-tls-key", "member.key", "--cluster-ca", "ca.crt")]
    public async Task AHostWithoutUsableClusterSecurityExitsWithCode2(string message, params string[] args)
    {
        using var dir = new TempDirectory();
        var run = await HostProcess.RunAsync(["--role", "unit", "--data", dir.Sub("u"), "--port", "0", .. args]);
        Assert.True(run.ExitCode == 2, run.Output);
        Assert.Contains(message, run.Output, StringComparison.Ordinal);
        Assert.DoesNotContain("   at ", run.Output, StringComparison.Ordinal);
    }
}
