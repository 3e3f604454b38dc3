using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;

namespace Hyder.LogBench;

/// <summary>A log host child process on loopback.</summary>
internal sealed partial class HostProcess : IAsyncDisposable
{
    private readonly Process _process;

    private HostProcess(Process process) => _process = process;

    public int Port { get; private set; }

    public string Endpoint => $"127.0.0.1:{Port}";

    public int Pid => _process.Id;

    public static async Task<HostProcess> StartAsync(string configuration, params string[] args)
    {
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };

        // No diagnostic pipes in /tmp: a SIGKILLed process could not remove them.
        start.Environment["DOTNET_EnableDiagnostics"] = "0";
        start.ArgumentList.Add(HostDll(configuration));
        foreach (var arg in args)
        {
            start.ArgumentList.Add(arg);
        }

        var host = new HostProcess(Process.Start(start)!);
        var ready = new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously);
        host._process.OutputDataReceived += (_, e) =>
        {
            if (e.Data is null)
            {
                ready.TrySetException(new InvalidOperationException("The log host exited before it was ready."));
            }
            else if (ReadyLine().Match(e.Data) is { Success: true } match)
            {
                ready.TrySetResult(int.Parse(match.Groups[1].Value, CultureInfo.InvariantCulture));
            }
        };
        host._process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is not null)
            {
                Console.Error.WriteLine(e.Data);
            }
        };
        host._process.BeginOutputReadLine();
        host._process.BeginErrorReadLine();
        host.Port = await ready.Task.WaitAsync(TimeSpan.FromSeconds(30));
        return host;
    }

    /// <summary>CPU seconds the process has used so far: user and kernel.</summary>
    public (double User, double Kernel) Cpu
    {
        get
        {
            _process.Refresh();
            return (_process.UserProcessorTime.TotalSeconds, _process.PrivilegedProcessorTime.TotalSeconds);
        }
    }

    private static string HostDll(string configuration)
    {
        var root = new DirectoryInfo(AppContext.BaseDirectory);
        while (!File.Exists(Path.Combine(root.FullName, "Hyder.sln")))
        {
            root = root.Parent ?? throw new InvalidOperationException("Hyder.sln not found.");
        }

        return Path.Combine(root.FullName, "src", "Hyder.Log.Host", "bin", configuration, "net10.0", "Hyder.Log.Host.dll");
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            using (var term = Process.Start("kill", ["-TERM", _process.Id.ToString(CultureInfo.InvariantCulture)]))
            {
                await term.WaitForExitAsync();
            }

            if (!_process.WaitForExit(10_000))
            {
                _process.Kill();
            }
        }

        _process.Dispose();
    }

    [GeneratedRegex(@"Log host ready on port (\d+)")]
    private static partial Regex ReadyLine();
}
