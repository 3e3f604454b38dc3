using System.Diagnostics;
using System.Globalization;
using System.Text.RegularExpressions;

namespace Hyder.Soak.Cluster;

/// <summary>What a process of a local cluster is.</summary>
public enum ProcessRole
{
    /// <summary>The file-backed projection store (hyder-log --role projection).</summary>
    Projection,

    /// <summary>The sequencer (hyder-log --role sequencer).</summary>
    Sequencer,

    /// <summary>A log unit (hyder-log --role unit).</summary>
    Unit,

    /// <summary>A transaction server (hyder-server).</summary>
    Server,
}

/// <summary>
/// One process of a <see cref="LocalCluster"/>: a child of this process with a fixed command line,
/// so it can be killed and started again at the same address. Output goes to
/// <c>logs/NAME.log</c> in the cluster's directory, and the last lines are kept for messages.
/// </summary>
public sealed partial class ClusterProcess : IAsyncDisposable
{
    private const int KeptLines = 200;
    private static readonly TimeSpan s_readyTimeout = TimeSpan.FromSeconds(90);

    private readonly IReadOnlyList<string> _command;
    private readonly string _logFile;
    private readonly Queue<string> _lines = new();
    private readonly Lock _gate = new();
    private Process? _process;
    private StreamWriter? _log;

    internal ClusterProcess(string name, ProcessRole role, string address, int port, IReadOnlyList<string> command, string logFile)
    {
        Name = name;
        Role = role;
        Address = address;
        Port = port;
        _command = command;
        _logFile = logFile;
    }

    /// <summary>Its name: projection, sequencer, unit-N, server-N (as deploy/local-cluster.sh names them).</summary>
    public string Name { get; }

    /// <summary>What it is.</summary>
    public ProcessRole Role { get; }

    /// <summary>The IP address it listens on.</summary>
    public string Address { get; }

    /// <summary>Its port (gRPC for a server).</summary>
    public int Port { get; }

    /// <summary>The command line, program first.</summary>
    public IReadOnlyList<string> Command => _command;

    /// <summary>The endpoint as projections name it (ADDRESS:PORT), or a server's gRPC URL.</summary>
    public string Endpoint => Role == ProcessRole.Server ? $"http://{Address}:{Port}" : $"{Address}:{Port}";

    /// <summary>The running process's id, or null.</summary>
    public int? Pid => _process is { HasExited: false } p ? p.Id : null;

    /// <summary>Whether it runs.</summary>
    public bool IsRunning => _process is { HasExited: false };

    /// <summary>Times it was started.</summary>
    public int Starts { get; private set; }

    /// <summary>The last lines it wrote.</summary>
    public string Tail
    {
        get
        {
            lock (_gate)
            {
                return string.Join('\n', _lines);
            }
        }
    }

    /// <summary>Starts it and waits for its ready line; throws with its output if it exits first or is not ready in 90 s.</summary>
    public async Task StartAsync(CancellationToken cancellationToken = default)
    {
        if (IsRunning)
        {
            throw new InvalidOperationException($"{Name} is already running (pid {_process!.Id}).");
        }

        _process?.Dispose();
        var info = new ProcessStartInfo(_command[0])
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            RedirectStandardInput = true,
            UseShellExecute = false,
        };
        foreach (var argument in _command.Skip(1))
        {
            info.ArgumentList.Add(argument);
        }

        // No diagnostic pipes in /tmp: a killed process could not remove them.
        info.Environment["DOTNET_EnableDiagnostics"] = "0";
        lock (_gate)
        {
            _log ??= new StreamWriter(_logFile, append: true) { AutoFlush = true };
            _log.WriteLine($"--- {DateTime.UtcNow:O} start: {string.Join(' ', _command)}");
            _lines.Clear();
        }

        var ready = new TaskCompletionSource(TaskCreationOptions.RunContinuationsAsynchronously);
        var process = new Process { StartInfo = info, EnableRaisingEvents = true };
        var pattern = Role == ProcessRole.Server ? ServerReady() : LogHostReady();
        process.OutputDataReceived += (_, e) => OnLine(e.Data, pattern, ready);
        process.ErrorDataReceived += (_, e) => OnLine(e.Data, null, null);
        process.Exited += (_, _) => ready.TrySetException(new InvalidOperationException($"{Name} exited before it was ready:\n{Tail}"));
        process.Start();
        _process = process;
        Starts++;
        process.StandardInput.Close();
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        try
        {
            await ready.Task.WaitAsync(s_readyTimeout, cancellationToken).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            Kill();
            throw new TimeoutException($"{Name} was not ready within {s_readyTimeout.TotalSeconds} s:\n{Tail}");
        }
        catch
        {
            Kill();
            throw;
        }
    }

    /// <summary>SIGKILL, and waits until it is gone. Does nothing if it is not running.</summary>
    public void Kill()
    {
        if (_process is { HasExited: false } p)
        {
            try
            {
                p.Kill();
            }
            catch (InvalidOperationException)
            {
                // It exited between the check and the kill.
            }

            p.WaitForExit();
        }
    }

    /// <summary>SIGTERM; waits up to <paramref name="patience"/>, then SIGKILL. Returns the exit code (137 after SIGKILL).</summary>
    public async Task<int?> StopAsync(TimeSpan patience)
    {
        if (_process is not { HasExited: false } p)
        {
            return _process?.ExitCode;
        }

        using (var kill = Process.Start("kill", ["-TERM", p.Id.ToString(CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync().ConfigureAwait(false);
        }

        try
        {
            await p.WaitForExitAsync().WaitAsync(patience).ConfigureAwait(false);
        }
        catch (TimeoutException)
        {
            Kill();
        }

        return p.ExitCode;
    }

    /// <summary>The resident set in bytes (VmRSS in /proc/PID/status), or null when it does not run or /proc has no answer.</summary>
    public long? ResidentBytes()
    {
        if (Pid is not { } pid)
        {
            return null;
        }

        try
        {
            foreach (var line in File.ReadLines($"/proc/{pid}/status"))
            {
                if (line.StartsWith("VmRSS:", StringComparison.Ordinal))
                {
                    var kib = line["VmRSS:".Length..].Trim().Split(' ')[0];
                    return long.Parse(kib, CultureInfo.InvariantCulture) * 1024;
                }
            }
        }
        catch (IOException)
        {
            // It exited while being read.
        }

        return null;
    }

    public async ValueTask DisposeAsync()
    {
        if (IsRunning)
        {
            await StopAsync(TimeSpan.FromSeconds(10)).ConfigureAwait(false);
        }

        _process?.Dispose();
        lock (_gate)
        {
            _log?.Dispose();
            _log = null;
        }
    }

    private void OnLine(string? line, Regex? ready, TaskCompletionSource? signal)
    {
        if (line is null)
        {
            return;
        }

        lock (_gate)
        {
            _log?.WriteLine(line);
            _lines.Enqueue(line);
            if (_lines.Count > KeptLines)
            {
                _lines.Dequeue();
            }
        }

        if (ready is not null && ready.IsMatch(line))
        {
            signal!.TrySetResult();
        }
    }

    [GeneratedRegex(@"^hyder-server \S+ ready on ")]
    private static partial Regex ServerReady();

    [GeneratedRegex(@"Log host ready on port \d+")]
    private static partial Regex LogHostReady();
}
