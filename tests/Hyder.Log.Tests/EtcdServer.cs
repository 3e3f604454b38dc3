using System.Diagnostics;
using Hyder.Testing;

namespace Hyder.Log.Tests;

/// <summary>A private etcd on loopback ports in a temporary directory, stopped and removed on dispose.</summary>
internal sealed class EtcdServer : IAsyncDisposable
{
    private readonly Process _process;
    private readonly TempDirectory _directory;

    private EtcdServer(Process process, TempDirectory directory, Uri endpoint)
    {
        _process = process;
        _directory = directory;
        Endpoint = endpoint;
    }

    public Uri Endpoint { get; }

    public static async Task<EtcdServer> StartAsync()
    {
        MissingPackageException.ThrowIfNotFound("etcd", "etcd-server");
        var directory = new TempDirectory();
        var client = ReservedPorts.Take();
        var peer = ReservedPorts.Take();
        var start = new ProcessStartInfo("etcd")
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            ArgumentList =
            {
                "--name", "test",
                "--data-dir", directory.Sub("data"),
                "--listen-client-urls", $"http://127.0.0.1:{client}",
                "--advertise-client-urls", $"http://127.0.0.1:{client}",
                "--listen-peer-urls", $"http://127.0.0.1:{peer}",
                "--initial-advertise-peer-urls", $"http://127.0.0.1:{peer}",
                "--initial-cluster", $"test=http://127.0.0.1:{peer}",
            },
        };
        var process = Process.Start(start) ?? throw new InvalidOperationException("etcd did not start.");
        process.OutputDataReceived += (_, _) => { };
        process.ErrorDataReceived += (_, _) => { };
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        var server = new EtcdServer(process, directory, new Uri($"http://127.0.0.1:{client}/"));
        using var http = new HttpClient();
        for (var i = 0; i < 200; i++)
        {
            try
            {
                using var response = await http.GetAsync(new Uri(server.Endpoint, "health"));
                if (response.IsSuccessStatusCode)
                {
                    return server;
                }
            }
            catch (HttpRequestException)
            {
            }

            await Task.Delay(50);
        }

        await server.DisposeAsync();
        throw new InvalidOperationException("etcd did not become healthy in 10 s.");
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            _process.Kill();
            await _process.WaitForExitAsync();
        }

        _process.Dispose();
        _directory.Dispose();
    }
}
