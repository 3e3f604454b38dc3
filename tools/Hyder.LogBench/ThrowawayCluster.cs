using System.Security.Cryptography.X509Certificates;
using Hyder.Log.Transport;
using Hyder.Testing;

namespace Hyder.LogBench;

/// <summary>
/// <c>--tls</c>: a CA made for one run and member certificates it issues, written as PEM files
/// into the run's data directory (deleted with it), the way an operator hands them to the hosts.
/// </summary>
internal sealed class ThrowawayCluster : IDisposable
{
    private readonly X509Certificate2 _ca;
    private readonly string _directory;
    private readonly string _caPath;

    public ThrowawayCluster(string dataDirectory)
    {
        _directory = Path.Combine(dataDirectory, "tls");
        Directory.CreateDirectory(_directory);
        _ca = TestCertificates.CreateCa("hyder-logbench-throwaway-ca");
        _caPath = TestCertificates.WriteCaPem(_ca, _directory, "ca");
    }

    /// <summary>The host options that give the member <paramref name="name"/> its own certificate.</summary>
    public string[] MemberArguments(string name)
    {
        using var cert = TestCertificates.Issue(_ca, name, server: true, client: true);
        var (certPath, keyPath) = TestCertificates.WritePem(cert, _directory, name);
        return ["--cluster-tls-cert", certPath, "--cluster-tls-key", keyPath, "--cluster-ca", _caPath];
    }

    /// <summary>The benchmark client's own member identity.</summary>
    public TransportSecurity ClientSecurity()
    {
        var (certPath, keyPath) = TestCertificates.WritePem(TestCertificates.Issue(_ca, "logbench-client", server: false, client: true), _directory, "client");
        return TransportSecurity.Load(certPath, keyPath, _caPath);
    }

    public void Dispose() => _ca.Dispose();
}
