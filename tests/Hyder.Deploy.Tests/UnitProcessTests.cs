using System.Diagnostics;
using System.Globalization;
using System.Text;
using System.Text.Json.Nodes;
using System.Text.RegularExpressions;
using Hyder.Client;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Deploy.Tests;

/// <summary>
/// The hosts started from their units' command lines with the environment systemd gives a
/// <c>Type=notify</c> service: readiness reaches the test's NOTIFY_SOCKET once the server answers,
/// watchdog pings arrive, SIGTERM sends STOPPING=1 and exits 0 with every acknowledged write kept.
/// </summary>
public sealed partial class UnitProcessTests(ITestOutputHelper output)
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(30);

    private static byte[] Bytes(string s) => Encoding.UTF8.GetBytes(s);

    /// <summary>A unit's ExecStart as arguments, with the installed paths mapped to this checkout's.</summary>
    private static List<string> CommandLine(string unit, IReadOnlyDictionary<string, string> paths)
    {
        var execStart = DeployFiles.Directives(Path.Combine(DeployFiles.Directory, unit)).Single(d => d.Key == "ExecStart").Value;
        return [.. execStart.Split(' ', StringSplitOptions.RemoveEmptyEntries).Select(a => paths.GetValueOrDefault(a, a))];
    }

    private static Process Start(List<string> commandLine, NotifySocket notify, IReadOnlyDictionary<string, string> environment, List<string> lines)
    {
        var info = new ProcessStartInfo(commandLine[0] == "/usr/bin/dotnet" ? "dotnet" : commandLine[0])
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
        };
        foreach (var arg in commandLine.Skip(1))
        {
            info.ArgumentList.Add(arg);
        }

        // What systemd sets for a Type=notify unit with WatchdogSec=, plus the unit's Environment=.
        info.Environment["NOTIFY_SOCKET"] = notify.Address;
        info.Environment["INVOCATION_ID"] = Guid.NewGuid().ToString("N");
        info.Environment["DOTNET_EnableDiagnostics"] = "0";
        foreach (var (name, value) in environment)
        {
            info.Environment[name] = value;
        }

        var process = Process.Start(info)!;
        void Add(object? sender, DataReceivedEventArgs e)
        {
            if (e.Data is not null)
            {
                lock (lines)
                {
                    lines.Add(e.Data);
                }
            }
        }

        process.OutputDataReceived += Add;
        process.ErrorDataReceived += Add;
        process.BeginOutputReadLine();
        process.BeginErrorReadLine();
        return process;
    }

    /// <summary>The assignments of a sample environment file, as systemd's <c>EnvironmentFile=</c> reads them.</summary>
    private static Dictionary<string, string> EnvironmentFile(string sample) =>
        File.ReadAllLines(Path.Combine(DeployFiles.Directory, sample))
            .Where(l => l.Length > 0 && l[0] != '#' && l.Contains('=', StringComparison.Ordinal))
            .ToDictionary(l => l[..l.IndexOf('=', StringComparison.Ordinal)], l => l[(l.IndexOf('=', StringComparison.Ordinal) + 1)..]);

    private static async Task<int> TerminateAsync(Process process)
    {
        using (var kill = Process.Start("kill", ["-TERM", process.Id.ToString(CultureInfo.InvariantCulture)]))
        {
            await kill.WaitForExitAsync();
        }

        await process.WaitForExitAsync().WaitAsync(s_patience);
        return process.ExitCode;
    }

    /// <summary>The status line the host sent with its readiness (a datagram of its own, beside READY=1).</summary>
    private static async Task<string> StatusAsync(NotifySocket notify)
    {
        static bool IsStatus(string message) => message.StartsWith("STATUS=", StringComparison.Ordinal);
        return notify.Received.FirstOrDefault(IsStatus) ?? await notify.WaitForAsync(IsStatus, s_patience);
    }

    private static string Joined(List<string> lines)
    {
        lock (lines)
        {
            return string.Join('\n', lines);
        }
    }

    [Fact]
    public async Task TheServerUnitNotifiesReadyStoppingAndWatchdogAndKeepsEveryAcknowledgedWriteAcrossSigterm()
    {
        using var directory = new TempDirectory("hyder-deploy-test-");
        var data = Path.Combine(directory.Path, "data");
        var sample = JsonNode.Parse(File.ReadAllText(Path.Combine(DeployFiles.Directory, "server.sample.json")))!;
        sample["Listen"] = "http://127.0.0.1:0";
        sample["Log"]!["Data"] = data;
        var config = Path.Combine(directory.Path, "server.json");
        File.WriteAllText(config, sample.ToJsonString());
        var commandLine = CommandLine("hyder-server.service", new Dictionary<string, string>
        {
            ["/opt/hyder/server/hyder-server.dll"] = BuiltProject.Dll("Hyder.Server.Host", "hyder-server.dll"),
            ["/etc/hyder/server.json"] = config,
        });
        output.WriteLine(string.Join(' ', commandLine));
        var watchdog = new Dictionary<string, string> { ["WATCHDOG_USEC"] = "400000" };

        var acknowledged = new List<string>();
        using (var notify = new NotifySocket())
        {
            var lines = new List<string>();
            using var process = Start(commandLine, notify, watchdog, lines);
            try
            {
                await notify.WaitForAsync("READY=1", s_patience);

                // READY=1 comes after the server serves: the address in its status answers at once.
                var status = await StatusAsync(notify);
                var address = new Uri(ServingAddress().Match(status).Groups[1].Value);
                await using (var client = new HyderClient(new HyderClientSettings { Endpoint = address, Timeout = TimeSpan.FromSeconds(10), MaxRetries = 0 }))
                {
                    Assert.Equal("server-1", (await client.GetStatusAsync()).ServerId);
                    for (var i = 0; i < 50; i++)
                    {
                        var key = $"key-{i:D3}";
                        await client.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Bytes(key), Bytes("v" + key))]);
                        acknowledged.Add(key);
                    }
                }

                await notify.WaitForAsync("WATCHDOG=1", s_patience);
                Assert.Equal(0, await TerminateAsync(process));
                Assert.Contains("STOPPING=1", notify.Received.SelectMany(NotifySocket.Assignments));
                var log = Joined(lines);
                output.WriteLine(log);

                // Under systemd (INVOCATION_ID) the console logger writes syslog priority prefixes.
                Assert.Contains("<6>Hyder.Server.Host.ServerHostService[", log, StringComparison.Ordinal);
                Assert.Contains("Server stopped cleanly", log, StringComparison.Ordinal);
            }
            finally
            {
                if (!process.HasExited)
                {
                    process.Kill();
                }
            }
        }

        // The same unit again, on the same data: every acknowledged write is there.
        using (var notify = new NotifySocket())
        {
            var lines = new List<string>();
            using var process = Start(commandLine, notify, new Dictionary<string, string>(), lines);
            try
            {
                await notify.WaitForAsync("READY=1", s_patience);
                var status = await StatusAsync(notify);
                var address = new Uri(ServingAddress().Match(status).Groups[1].Value);
                await using (var client = new HyderClient(new HyderClientSettings { Endpoint = address, Timeout = TimeSpan.FromSeconds(10) }))
                {
                    var values = await client.ReadAsync(acknowledged.Select(Bytes));
                    for (var i = 0; i < acknowledged.Count; i++)
                    {
                        Assert.True(values[i] is not null, $"{acknowledged[i]} was acknowledged before SIGTERM and is gone after the restart");
                        Assert.Equal("v" + acknowledged[i], Encoding.UTF8.GetString(values[i]!));
                    }
                }

                Assert.Equal(0, await TerminateAsync(process));
                Assert.DoesNotContain(notify.Received, m => m.Contains("WATCHDOG=1", StringComparison.Ordinal));
            }
            finally
            {
                if (!process.HasExited)
                {
                    process.Kill();
                }
            }
        }
    }

    [Fact]
    public async Task TheProjectionUnitNotifiesReadyOnceItListensAndStoppingOnSigterm()
    {
        using var directory = new TempDirectory("hyder-deploy-test-");
        var commandLine = CommandLine("hyder-projection.service", new Dictionary<string, string>
        {
            ["/opt/hyder/log/Hyder.Log.Host.dll"] = BuiltProject.Dll("Hyder.Log.Host", "Hyder.Log.Host.dll"),
            ["/var/lib/hyder/projection"] = directory.Path,
            ["${HYDER_LOG_LISTEN}"] = "127.0.0.1",
            ["${HYDER_LOG_PORT}"] = "0",
            ["$HYDER_LOG_OPTIONS"] = "--log-format=systemd",
        });
        using var notify = new NotifySocket();
        var lines = new List<string>();

        // EnvironmentFile=: the sample's variables (the cluster security choice among them).
        using var process = Start(commandLine, notify, EnvironmentFile("projection.sample.env"), lines);
        try
        {
            await notify.WaitForAsync("READY=1", s_patience);
            var status = await StatusAsync(notify);
            Assert.StartsWith("STATUS=Serving projection on 127.0.0.1:", status, StringComparison.Ordinal);

            // Ready means listening: a TCP connection to the reported port succeeds.
            using (var tcp = new System.Net.Sockets.TcpClient())
            {
                await tcp.ConnectAsync("127.0.0.1", int.Parse(status[(status.LastIndexOf(':') + 1)..], CultureInfo.InvariantCulture));
            }

            Assert.Equal(0, await TerminateAsync(process));
            Assert.Contains("STOPPING=1", notify.Received.SelectMany(NotifySocket.Assignments));
            Assert.Contains("<6>Hyder.Log.Host.LogHostService[", Joined(lines), StringComparison.Ordinal);
        }
        finally
        {
            if (!process.HasExited)
            {
                process.Kill();
            }
        }
    }

    [GeneratedRegex(@"serving gRPC on (\S+)")]
    private static partial Regex ServingAddress();
}
