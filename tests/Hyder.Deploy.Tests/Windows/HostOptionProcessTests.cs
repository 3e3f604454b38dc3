using System.Diagnostics;
using System.Globalization;
using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>
/// Both hosts as processes: off Windows, <c>--service</c> and the event log are refused at start
/// with exit code 2 and a sentence; <c>--log-target file</c> writes the host's log to the file.
/// </summary>
public sealed class HostOptionProcessTests
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(30);

    private static string LogHost => BuiltProject.Dll("Hyder.Log.Host", "Hyder.Log.Host.dll");

    private static string Server => BuiltProject.Dll("Hyder.Server.Host", "hyder-server.dll");

    [Theory]
    [InlineData("log", "--log-target eventlog", "--log-target eventlog: the Windows event log exists only on Windows; use console or file.")]
    [InlineData("log", "--service", "--service runs the host under the Windows Service Control Manager, which exists only on Windows")]
    [InlineData("server", "--log-target eventlog", "hyder-server: --log-target [Logging:Target] eventlog: the Windows event log exists only on Windows; use console or file.")]
    [InlineData("server", "--service", "hyder-server: --service runs the host under the Windows Service Control Manager, which exists only on Windows")]
    [InlineData("server", "--log-target file", "hyder-server: --log-target [Logging:Target] file needs --log-file [Logging:File] with the log file's path.")]
    public async Task OffWindowsTheServiceAndTheEventLogAreRefusedWithExitCode2(string host, string options, string message)
    {
        using var directory = new TempDirectory("hyder-deploy-test-");
        string[] args = host == "log"
            ? [LogHost, "--role", "unit", "--data", directory.Path, "--port", "0", .. options.Split(' ')]
            : [Server, "--embedded", "--listen", "http://127.0.0.1:0", .. options.Split(' ')];
        var (code, output) = await DeployFiles.RunAsync(DeployFiles.Dotnet(), args);
        Assert.True(code == 2, $"exit {code}: {output}");
        Assert.Contains(message, output, StringComparison.Ordinal);
        Assert.Empty(Directory.EnumerateFileSystemEntries(directory.Path));
    }

    [Fact]
    public async Task TheLogHostWritesItsLogToTheFileItIsGivenAndStopsCleanlyOnSigterm()
    {
        using var directory = new TempDirectory("hyder-deploy-test-");
        var log = Path.Combine(directory.Path, "logs", "hyder-log.log");
        var info = new ProcessStartInfo(DeployFiles.Dotnet())
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var arg in new[] { LogHost, "--role", "unit", "--data", Path.Combine(directory.Path, "data"), "--port", "0", "--log-target", "file", "--log-file", log, "--cluster-allow-plaintext" })
        {
            info.ArgumentList.Add(arg);
        }

        using var process = Process.Start(info)!;
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        try
        {
            var deadline = DateTime.UtcNow + s_patience;
            while (!(File.Exists(log) && Read(log).Contains("Log host ready on port", StringComparison.Ordinal)))
            {
                if (process.HasExited)
                {
                    Assert.Fail($"hyder-log exited {process.ExitCode}: {await stderr}");
                }

                Assert.True(DateTime.UtcNow < deadline, "no ready line in the log file");
                await Task.Delay(50);
            }
        }
        finally
        {
            using (var kill = Process.Start("kill", ["-TERM", process.Id.ToString(CultureInfo.InvariantCulture)]))
            {
                await kill.WaitForExitAsync();
            }

            await process.WaitForExitAsync().WaitAsync(s_patience);
        }

        Assert.Equal(0, process.ExitCode);
        var lines = File.ReadAllLines(log);
        Assert.All(lines, l => Assert.Matches(@"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z (info|warn|fail|crit|dbug|trce) \S+\[\d+\] ", l));
        Assert.Contains(lines, l => l.Contains("Log host stopped cleanly", StringComparison.Ordinal));
        // Nothing of the log went to the console.
        Assert.DoesNotContain("Log host ready", await stdout + await stderr, StringComparison.Ordinal);
    }

    private static string Read(string path)
    {
        using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        using var reader = new StreamReader(stream);
        return reader.ReadToEnd();
    }
}
