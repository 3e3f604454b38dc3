using System.Diagnostics;
using System.Text.RegularExpressions;
using Hyder.Testing;

namespace Hyder.Log.Tests;

/// <summary>A Hyder.Log.Host child process on loopback; killed on dispose if still running.</summary>
internal sealed partial class HostProcess : IAsyncDisposable
{
    private readonly Process _process;
    private readonly List<string> _output = [];

    private HostProcess(Process process) => _process = process;

    public int Port { get; private set; }

    public string Endpoint => $"127.0.0.1:{Port}";

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

    public static string HostDll => BuiltProject.Dll("Hyder.Log.Host", "Hyder.Log.Host.dll");

    /// <summary>Starts the host and waits until it listens.</summary>
    public static async Task<HostProcess> StartAsync(params string[] args)
    {
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };

        // No diagnostic pipes in /tmp: a SIGKILLed process could not remove them.
        start.Environment["DOTNET_EnableDiagnostics"] = "0";
        start.ArgumentList.Add(HostDll);
        foreach (var arg in WithClusterSecurity(args))
        {
            start.ArgumentList.Add(arg);
        }

        var host = new HostProcess(Process.Start(start)!);
        var ready = new TaskCompletionSource<int>(TaskCreationOptions.RunContinuationsAsynchronously);
        void OnLine(object? sender, DataReceivedEventArgs e)
        {
            if (e.Data is null)
            {
                ready.TrySetException(new InvalidOperationException("The host exited before it was ready:\n" + host.Output));
                return;
            }

            lock (host._output)
            {
                host._output.Add(e.Data);
            }

            if (ReadyLine().Match(e.Data) is { Success: true } match)
            {
                ready.TrySetResult(int.Parse(match.Groups[1].Value, System.Globalization.CultureInfo.InvariantCulture));
            }
        }

        host._process.OutputDataReceived += OnLine;
        host._process.ErrorDataReceived += (_, e) =>
        {
            if (e.Data is not null)
            {
                lock (host._output)
                {
                    host._output.Add(e.Data);
                }
            }
        };
        host._process.BeginOutputReadLine();
        host._process.BeginErrorReadLine();
        try
        {
            host.Port = await ready.Task.WaitAsync(TimeSpan.FromSeconds(30));
        }
        catch
        {
            await host.DisposeAsync();
            throw;
        }

        return host;
    }

    /// <summary>Runs the host to completion (an admin command) and returns its exit code and output.</summary>
    public static async Task<(int ExitCode, string Output)> RunAsync(params string[] args)
    {
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };

        // No diagnostic pipes in /tmp: a SIGKILLed process could not remove them.
        start.Environment["DOTNET_EnableDiagnostics"] = "0";
        start.ArgumentList.Add(HostDll);
        foreach (var arg in WithClusterSecurity(args))
        {
            start.ArgumentList.Add(arg);
        }

        using var process = Process.Start(start)!;
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(60));
        return (process.ExitCode, await stdout + await stderr);
    }

    /// <summary>
    /// The arguments, with <c>--cluster-allow-plaintext</c> added unless they configure cluster
    /// TLS or plaintext themselves: the host refuses to guess.
    /// </summary>
    private static IEnumerable<string> WithClusterSecurity(string[] args) =>
        args.Any(a => a.StartsWith("--cluster-", StringComparison.Ordinal)) ? args : [.. args, "--cluster-allow-plaintext"];

    /// <summary>SIGKILL: no chance to flush or close anything.</summary>
    public async Task KillAsync()
    {
        _process.Kill();
        await _process.WaitForExitAsync();
    }

    /// <summary>Sends a signal by name (STOP, CONT, …).</summary>
    public async Task SignalAsync(string signal)
    {
        using var kill = Process.Start("kill", [$"-{signal}", _process.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]);
        await kill.WaitForExitAsync();
    }

    /// <summary>SIGTERM, then waits for the clean exit.</summary>
    public async Task<int> StopAsync()
    {
        using (var kill = Process.Start("kill", ["-TERM", _process.Id.ToString(System.Globalization.CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync();
        }

        await _process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(20));
        return _process.ExitCode;
    }

    public async ValueTask DisposeAsync()
    {
        if (!_process.HasExited)
        {
            // SIGKILL also ends a stopped process.
            _process.Kill();
            await _process.WaitForExitAsync();
        }

        _process.Dispose();
    }

    [GeneratedRegex(@"Log host ready on port (\d+)")]
    private static partial Regex ReadyLine();
}
