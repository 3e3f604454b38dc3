using Xunit;
using Xunit.Abstractions;

namespace Hyder.Server.Host.Tests;

/// <summary>
/// The ClusterTls settings of hyder-server: a server that talks to other members (a remote log or
/// broadcast) needs mutual TLS or an explicit plaintext, from options or the environment.
/// </summary>
public sealed class ClusterTlsSettingsTests(ITestOutputHelper output)
{
    [Theory]
    [InlineData("--log tcp:127.0.0.1:1")]
    [InlineData("--embedded --broadcast-listen 127.0.0.1:0")]
    [InlineData("--embedded --peer 127.0.0.1:7")]
    public async Task ClusterTrafficWithoutTlsOrAnExplicitPlaintextExitsWithTwo(string commandLine)
    {
        var (code, text) = await ServerProcess.RunAsync(null, commandLine.Split(' '));
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains("cluster traffic is unprotected", text, StringComparison.Ordinal);
        Assert.Contains("--cluster-allow-plaintext (ClusterTls:AllowPlaintext=true)", text, StringComparison.Ordinal);
    }

    [Fact]
    public async Task ClusterTlsSettingsComeFromTheEnvironmentAndAreChecked()
    {
        var (code, text) = await ServerProcess.RunAsync(
            new Dictionary<string, string> { ["HYDER_CLUSTERTLS__CERTIFICATE"] = "/nonexistent/member.crt" },
            "--log", "tcp:127.0.0.1:1");
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains("--cluster-tls-key (ClusterTls:Key) is missing", text, StringComparison.Ordinal);

        (code, text) = await ServerProcess.RunAsync(
            new Dictionary<string, string> { ["HYDER_CLUSTERTLS__ALLOWPLAINTEXT"] = "true" },
            "--log", "tcp:127.0.0.1:1", "--cluster-tls-cert", "/nonexistent/member.crt");
        output.WriteLine(text);
        Assert.Equal(2, code);
        Assert.Contains("choose one", text, StringComparison.Ordinal);
    }
}
