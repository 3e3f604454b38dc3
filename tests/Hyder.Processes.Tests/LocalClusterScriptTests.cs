using System.Diagnostics;
using System.Text;
using System.Text.RegularExpressions;
using Hyder.Checker;
using Hyder.Client;
using Hyder.Soak.Workload;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Processes.Tests;

/// <summary>deploy/local-cluster.sh: start, transactions through the client, status, kill and restart, stop; nothing left running.</summary>
[Collection(RealProcesses.Name)]
public sealed partial class LocalClusterScriptTests(ITestOutputHelper output)
{
    private static string Script => Path.Combine(BuiltProject.RepositoryRoot(), "deploy", "local-cluster.sh");

    [Fact]
    public async Task StartServesTransactionsStatusReportsAndStopLeavesNothingRunning()
    {
        using var directory = new TempDirectory("hyder-local-cluster-");
        var dir = Path.Combine(directory.Path, "cluster");
        try
        {
            var started = await StartAsync(dir);
            var endpoints = ConnectionLine().Matches(started).Select(m => m.Groups[1].Value).ToArray();
            Assert.Equal(2, endpoints.Length);
            var pids = Pids(dir);
            Assert.Equal(6, pids.Count);

            await using var one = new HyderClient(endpoints[0]);
            await using var two = new HyderClient(endpoints[1]);
            CommitResult last = null!;
            for (var i = 0; i < 5; i++)
            {
                last = await one.ExecuteAsync(IsolationLevel.Serializable, [HyderOperation.Put(Encoding.UTF8.GetBytes($"k{i}"), Encoding.UTF8.GetBytes($"v{i}"))]);
            }

            // The other server melds the same log: it reads what the first committed, at the same hash.
            var hashTwo = await two.GetStateHashAsync(last.Ordinal);
            var hashOne = await one.GetStateHashAsync(last.Ordinal);
            Assert.Equal(hashOne, hashTwo);
            var values = await two.ReadAsync([.. Enumerable.Range(0, 5).Select(i => Encoding.UTF8.GetBytes($"k{i}"))]);
            Assert.Equal(Enumerable.Range(0, 5).Select(i => $"v{i}"), values.Select(v => Encoding.UTF8.GetString(v!)));

            var (code, status) = await RunAsync("status", "--dir", dir);
            Assert.Equal(0, code);
            Assert.Equal(6, RunningLine().Count(status));

            // A killed server shows in status (exit 1); start brings back only it, and it catches up.
            (code, _) = await RunAsync("kill", "server-2", "--dir", dir);
            Assert.Equal(0, code);
            (code, status) = await RunAsync("status", "--dir", dir);
            Assert.Equal(1, code);
            Assert.Matches(@"server-2\s+stopped", status);
            await StartAsync(dir);
            var restarted = Pids(dir);
            Assert.Equal(pids.Where(p => p.Key != "server-2"), restarted.Where(p => p.Key != "server-2"));
            Assert.NotEqual(pids["server-2"], restarted["server-2"]);
            Assert.Equal(hashOne.Hash, (await two.GetStateHashAsync(last.Ordinal)).Hash);

            (code, var stopped) = await RunAsync("stop", "--dir", dir);
            Assert.Equal(0, code);
            Assert.Equal(6, Regex.Count(stopped, "^stopped ", RegexOptions.Multiline));
            Assert.All(restarted.Values, pid => Assert.False(Alive(pid), $"pid {pid} still runs after stop"));

            // Idempotent: a second stop has nothing to do.
            (code, stopped) = await RunAsync("stop", "--dir", dir);
            Assert.Equal(0, code);
            Assert.Equal(string.Empty, stopped.Trim());
            (code, _) = await RunAsync("status", "--dir", dir);
            Assert.Equal(3, code);
        }
        finally
        {
            await RunAsync("stop", "--dir", dir);
        }
    }

    [Fact]
    public async Task BadArgumentsExitWithTwoAndSayWhy()
    {
        using var directory = new TempDirectory("hyder-local-cluster-");
        foreach (var (args, message) in new[]
        {
            (new[] { "start", "--units", "3", "--replicas", "2" }, "not a multiple of --replicas"),
            (new[] { "start", "--servers", "many" }, "--servers 'many' is not a whole number"),
            (new[] { "start", "--frobnicate" }, "unknown option '--frobnicate'"),
            (new[] { "restart" }, "unknown command 'restart'"),
        })
        {
            var (code, text) = await RunAsync([.. args, "--dir", Path.Combine(directory.Path, "c")]);
            Assert.Equal(2, code);
            Assert.Contains(message, text, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task TheVerifierReportsAnAcknowledgedAppendTheServersLack()
    {
        using var directory = new TempDirectory("hyder-local-cluster-");
        var dir = Path.Combine(directory.Path, "cluster");
        try
        {
            var endpoints = ConnectionLine().Matches(await StartAsync(dir, "--servers", "1", "--units", "1")).Select(m => m.Groups[1].Value).ToArray();
            await using var client = new HyderClient(endpoints[0]);
            var recorder = new HistoryRecorder();
            using (var stop = new CancellationTokenSource(TimeSpan.FromSeconds(2)))
            {
                await new ListAppendWorkload(recorder, seed: 7).RunAsync([client], processes: 2, firstProcess: 0, stop.Token);
            }

            Assert.True(recorder.Counts.Ok > 0);

            // More lists than one read may name (a server takes 1,024 operations): the final reads come in batches.
            recorder.Invoke(60, [.. Enumerable.Range(10_000, 1_500).Select(k => Mop.ReadUnknown(k))]);
            recorder.Fail(60);
            var honest = await Verifier.VerifyAsync([client], recorder, firstProcess: 100, TimeSpan.FromSeconds(30));
            output.WriteLine(honest.ToString());
            Assert.True(honest.Passed);

            // An acknowledgement the cluster never saw: lost, and the checker sees the final read miss it.
            recorder.Invoke(50, [Mop.Append(0, 1_000_000)]);
            recorder.Ok(50, [Mop.Append(0, 1_000_000)]);
            var lying = await Verifier.VerifyAsync([client], recorder, firstProcess: 200, TimeSpan.FromSeconds(30));
            output.WriteLine(lying.ToString());
            Assert.Equal(["server-1 list 0 lacks 1000000"], lying.Lost.Distinct());
            Assert.False(lying.Passed);
        }
        finally
        {
            await RunAsync("stop", "--dir", dir);
        }
    }

    /// <summary>
    /// Starts the cluster at a base port whose block of 100 (the script's layout, deploy/README.md)
    /// <see cref="ReservedPorts"/> gives this test alone, below the ephemeral range.
    /// </summary>
    private async Task<string> StartAsync(string dir, params string[] options)
    {
        if (File.Exists(Path.Combine(dir, "cluster.env")))
        {
            var (restartCode, restarted) = await RunAsync(["start", "--dir", dir, .. options]);
            Assert.True(restartCode == 0, restarted);
            return restarted;
        }

        var basePort = ReservedPorts.TakeBlock(100);
        var (code, text) = await RunAsync(["start", "--dir", dir, "--base-port", basePort.ToString(System.Globalization.CultureInfo.InvariantCulture), .. options]);
        Assert.True(code == 0, $"start failed ({code}):\n{text}");
        return text;
    }

    /// <summary>Whether the process exists and is not a zombie (the script's children are reaped by whoever adopts them, maybe later).</summary>
    private static bool Alive(int pid)
    {
        try
        {
            var stat = File.ReadAllText($"/proc/{pid}/stat");
            return stat[(stat.LastIndexOf(')') + 2)..].StartsWith('Z') is false;
        }
        catch (IOException)
        {
            return false;
        }
    }

    private static Dictionary<string, int> Pids(string dir) =>
        Directory.GetFiles(Path.Combine(dir, "pids"), "*.pid").ToDictionary(f => Path.GetFileNameWithoutExtension(f), f => int.Parse(File.ReadAllText(f).Trim(), System.Globalization.CultureInfo.InvariantCulture));

    private async Task<(int Code, string Output)> RunAsync(params string[] args)
    {
        var info = new ProcessStartInfo("bash") { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        info.ArgumentList.Add(Script);
        foreach (var a in args)
        {
            info.ArgumentList.Add(a);
        }

        using var process = Process.Start(info)!;
        var stdout = process.StandardOutput.ReadToEndAsync();
        var stderr = process.StandardError.ReadToEndAsync();
        await process.WaitForExitAsync().WaitAsync(TimeSpan.FromSeconds(180));
        var text = await stdout + await stderr;
        output.WriteLine($"$ local-cluster.sh {string.Join(' ', args)} -> {process.ExitCode}\n{text}");
        return (process.ExitCode, text);
    }

    [GeneratedRegex(@"^connection server-\d+: (Endpoint=\S+)$", RegexOptions.Multiline)]
    private static partial Regex ConnectionLine();

    [GeneratedRegex(@"^\S+\s+running\s", RegexOptions.Multiline)]
    private static partial Regex RunningLine();
}
