using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;
using Hyder.Testing;

namespace Hyder.Server.Host.Tests;

/// <summary>A hyder-server child process; killed on dispose if still running.</summary>
internal sealed partial class ServerProcess : IAsyncDisposable
{
    private readonly Process _process;
    private readonly List<string> _output = [];

    private ServerProcess(Process process) => _process = process;

    /// <summary>The gRPC address from the ready line.</summary>
    public Uri Address { get; private set; } = null!;

    public string Output
    {
        get
        {
            lock (_output)
            {
                return string.Join('\n', _output);
            }
        }
    }

    public static string HostDll => BuiltProject.Dll("Hyder.Server.Host", "hyder-server.dll");

    /// <summary>Starts the server and waits for its ready line.</summary>
    public static async Task<ServerProcess> StartAsync(params string[] args)
    {
        var server = new ServerProcess(Process.Start(Info(args))!);
        var ready = new TaskCompletionSource<Uri>(TaskCreationOptions.RunContinuationsAsynchronously);
        server._process.OutputDataReceived += (_, e) =>
        {
            if (e.Data is null)
            {
                ready.TrySetException(new InvalidOperationException("hyder-server exited before it was ready:\n" + server.Output));
                return;
            }

            server.Add(e.Data);
            if (ReadyLine().Match(e.Data) is { Success: true } match)
            {
                ready.TrySetResult(new Uri(match.Groups[1].Value));
            }
        };
        server._process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is not null)
            {
                server.Add(e.Data);
            }
        };
        server._process.BeginOutputReadLine();
        server._process.BeginErrorReadLine();
        try
        {
            server.Address = await ready.Task.WaitAsync(TimeSpan.FromSeconds(30));
        }
        catch
        {
            await server.DisposeAsync();
            throw;
        }

        return server;
    }

    /// <summary>Runs hyder-server to completion and returns its exit code and output.</summary>
    public static async Task<(int ExitCode, string Output)> RunAsync(IDictionary<string, string>? environment, params string[] args)
    {
        var info = Info(args);
        foreach (var (name, value) in environment ?? new Dictionary<string, string>())
        {
            info.Environment[name] = value;
        }

        using var process = Process.Start(info)!;
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(60));
        return (process.ExitCode, await stdout + await stderr);
    }

    /// <summary>SIGTERM, then waits for the exit; returns the exit code and how long it took.</summary>
    public async Task<(int ExitCode, TimeSpan Took)> StopAsync(TimeSpan patience)
    {
        var clock = Stopwatch.StartNew();
        using (var kill = Process.Start("kill", ["-TERM", _process.Id.ToString(CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync();
        }

        await _process.WaitForExitAsync().WaitAsync(patience);
        return (_process.ExitCode, clock.Elapsed);
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            _process.Kill();
            await _process.WaitForExitAsync();
        }

        _process.Dispose();
    }

    private static ProcessStartInfo Info(string[] args)
    {
        var info = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };

        // No diagnostic pipes in /tmp: a killed process could not remove them.
        info.Environment["DOTNET_EnableDiagnostics"] = "0";
        info.ArgumentList.Add(HostDll);
        foreach (var arg in args)
        {
            info.ArgumentList.Add(arg);
        }

        return info;
    }

    private void Add(string line)
    {
        lock (_output)
        {
            _output.Add(line);
        }
    }

    [GeneratedRegex(@"^hyder-server \S+ ready on (\S+)$")]
    private static partial Regex ReadyLine();
}
