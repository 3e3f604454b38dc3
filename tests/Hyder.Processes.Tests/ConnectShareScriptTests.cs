using System.Globalization;
using System.Net.Sockets;
using System.Text.RegularExpressions;
using Hyder.Testing;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>
/// <c>benchmarks/connect-share.sh</c>, issue 20's remote-client sitting in one command: its help and
/// refusals, and one short round of all three runs (embedded, the gRPC stack alone, <c>--connect</c>
/// against a hyder-server it starts and stops). With the real-process tests, one class at a time:
/// its runs load both cores, and its floor run's server would meet BenchmarkCommandTests' check
/// that none is left.
/// </summary>
[Collection(RealProcesses.Name)]
public sealed partial class ConnectShareScriptTests
{
    [Fact]
    public async Task HelpSaysHowToRunItAndBadOptionsAreRefusedWithExitCode2()
    {
        var help = await RunAsync("--help");
        Assert.Equal(0, help.Code);
        Assert.Contains("Usage: bash benchmarks/connect-share.sh", help.Output, StringComparison.Ordinal);
        Assert.Contains("--floor-work-us N", help.Output, StringComparison.Ordinal);

        foreach (var (args, message) in new[]
        {
            (new[] { "--fast" }, "unknown option '--fast'"),
            (new[] { "--rounds", "many" }, "--rounds takes a whole number, not 'many'"),
            (new[] { "--duration", "0" }, "--rounds, --duration and --record-count must be at least 1"),
            (new[] { "--configuration", "Fast" }, "--configuration takes Release or Debug"),
            (new[] { "--warmup" }, "--warmup needs a value"),
        })
        {
            var refused = await RunAsync(args);
            Assert.Equal(2, refused.Code);
            Assert.Contains(message, refused.Error, StringComparison.Ordinal);
            Assert.DoesNotContain("round 1", refused.Output, StringComparison.Ordinal);
        }
    }

    [Fact]
    public async Task AShortSittingReportsEachRunAndTheShareAndStopsItsServer()
    {
        var run = await RunAsync("--rounds", "1", "--warmup", "0", "--duration", "2", "--record-count", "2000", "--floor-work-us", "20", "--configuration", Configuration);
        Assert.True(run.Code == 0, run.Error + run.Output);
        var lines = run.Output.TrimEnd().Split('\n');

        var embedded = Match(lines, EmbeddedLine());
        var embeddedTps = Number(embedded, 1);
        Assert.True(embeddedTps > 0 && Number(embedded, 2) > 0, embedded.Value);

        var floor = Match(lines, FloorLine());
        Assert.True(Number(floor, 1) > 0, floor.Value);

        // The server spent at least the floor's given work on each transaction.
        Assert.True(Number(floor, 2) >= 20, floor.Value);
        AssertShare(Number(floor, 1), embeddedTps, Number(floor, 3));

        var connect = Match(lines, ConnectLine());
        var connectTps = Number(connect, 1);
        Assert.True(connectTps > 0 && Number(connect, 2) > 0 && Number(connect, 3) > 0, connect.Value);
        var share = Number(connect, 4);
        AssertShare(connectTps, embeddedTps, share);

        // The last line: the shares of the means, the means (one round: its own figures), the rounds' shares.
        var summary = SummaryLine().Match(lines[^1]);
        Assert.True(summary.Success, lines[^1]);
        AssertShare(connectTps, embeddedTps, Number(summary, 1));
        AssertShare(Number(floor, 1), embeddedTps, Number(summary, 2));
        Assert.Equal([embeddedTps, Number(floor, 1), connectTps, share, Number(floor, 3)], Enumerable.Range(3, 5).Select(g => Number(summary, g)));

        // The server it started listened on the endpoint its progress line names, and is gone.
        var endpoint = Regex.Match(run.Error, @"hyder-server --embedded on http://127\.0\.0\.1:(\d+)");
        Assert.True(endpoint.Success, run.Error);
        using var probe = new TcpClient();
        await Assert.ThrowsAnyAsync<SocketException>(() => probe.ConnectAsync("127.0.0.1", int.Parse(endpoint.Groups[1].Value, CultureInfo.InvariantCulture)));
    }

    private static string Configuration => new DirectoryInfo(Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory)).Parent!.Name;

    [GeneratedRegex(@"^round 1 embedded: (\d+) tx/s, ([\d.]+) us CPU/commit$")]
    private static partial Regex EmbeddedLine();

    [GeneratedRegex(@"^round 1 floor: +(\d+) tx/s, client .* server +([\d.]+) us CPU/tx .*; (\d+) % of embedded$")]
    private static partial Regex FloorLine();

    [GeneratedRegex(@"^round 1 connect: (\d+) tx/s, server ([\d.]+) \+ client ([\d.]+) us CPU/tx; (\d+) % of embedded$")]
    private static partial Regex ConnectLine();

    /// <summary>The printed share is of the unrounded embedded figure: within a point of the printed ones'.</summary>
    private static void AssertShare(double tps, double embeddedTps, double share) =>
        Assert.InRange(share, (100 * tps / embeddedTps) - 1, (100 * tps / embeddedTps) + 1);

    [GeneratedRegex(@"^connect-share: connect (\d+) % of embedded, floor (\d+) % \(means of 1 round\(s\): embedded (\d+), floor (\d+), connect (\d+) tx/s; per round: connect (\d+) %, floor (\d+) %\)$")]
    private static partial Regex SummaryLine();

    private static Match Match(string[] lines, Regex pattern)
    {
        var found = lines.Select(l => pattern.Match(l)).Where(m => m.Success).ToList();
        Assert.True(found.Count == 1, $"{found.Count} lines match {pattern}:\n{string.Join('\n', lines)}");
        return found[0];
    }

    private static double Number(Match match, int group) => double.Parse(match.Groups[group].Value, CultureInfo.InvariantCulture);

    private static Task<(int Code, string Output, string Error)> RunAsync(params string[] args) =>
        ChildProcess.RunAsync("bash", [Path.Combine(BuiltProject.RepositoryRoot(), "benchmarks", "connect-share.sh"), .. args], TimeSpan.FromMinutes(3));
}
