using System.Globalization;
using System.Text.RegularExpressions;
using Hyder.Testing;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>
/// The server benchmark's command line (benchmarks/Hyder.Benchmarks, `server`): `--help` prints
/// the options and runs nothing, and an option it does not know stops it before it runs for five
/// minutes and writes a report. (A mistyped option used to be ignored: `server --help` ran the
/// whole benchmark.) The transport floor (`rpc-floor`) starts a server process of its own, measures
/// both processes and stops the server. With the real-process tests, one class at a time: it checks
/// that no floor server is left, and ConnectShareScriptTests starts floor servers of its own.
/// </summary>
[Collection(RealProcesses.Name)]
public sealed class BenchmarkCommandTests
{
    [Fact]
    public async Task HelpPrintsTheOptionsAndRunsNothing()
    {
        var (code, output) = await RunAsync("server", "--help");
        Assert.Equal(0, code);
        Assert.Contains("Usage: dotnet run -c Release --project benchmarks/Hyder.Benchmarks -- server [options]", output, StringComparison.Ordinal);
        Assert.Contains("--quick", output, StringComparison.Ordinal);
        Assert.DoesNotContain("committed/s", output, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("--bogus", "server: unknown option '--bogus'")]
    [InlineData("--keys", "server: --keys needs a value")]
    public async Task AnUnknownOptionExitsWithTwoBeforeAnythingRuns(string option, string message)
    {
        var (code, output) = await RunAsync("server", option);
        Assert.Equal(2, code);
        Assert.Contains(message, output, StringComparison.Ordinal);
        Assert.DoesNotContain("committed/s", output, StringComparison.Ordinal);
    }

    [Fact]
    public async Task TheTransportFloorMeasuresBothTransportsAndStopsItsServer()
    {
        var (code, output) = await RunAsync("rpc-floor", "--streams", "4", "--warmup", "0", "--seconds", "1", "--rounds", "1", "--transport", "both", "--work-us", "20");
        Assert.True(code == 0, output);
        Assert.Contains("20 us of server work per transaction", output, StringComparison.Ordinal);
        foreach (var transport in new[] { "tcp", "uds" })
        {
            var line = output.Split('\n').Single(l => l.StartsWith($"round 1 {transport}:", StringComparison.Ordinal));
            var figures = Regex.Match(line, @"(\d+) tx/s, client\s+([\d.]+) us CPU/tx .*server\s+([\d.]+) us CPU/tx");
            Assert.True(figures.Success, line);
            Assert.True(double.Parse(figures.Groups[1].Value, CultureInfo.InvariantCulture) > 0, line);
            Assert.True(double.Parse(figures.Groups[2].Value, CultureInfo.InvariantCulture) > 0, line);

            // The server spent at least the work it was given on each transaction.
            Assert.True(double.Parse(figures.Groups[3].Value, CultureInfo.InvariantCulture) >= 20, line);
        }

        if (OperatingSystem.IsLinux())
        {
            Assert.DoesNotContain(Directory.EnumerateDirectories("/proc"), dir => CommandLine(dir).Contains("rpc-floor\0--serve", StringComparison.Ordinal));
        }
    }

    [Theory]
    [InlineData("--transport", "quic", "rpc-floor: --streams, --seconds and --rounds take a whole number")]
    [InlineData("--streams", "0", "rpc-floor: --streams, --seconds and --rounds take a whole number")]
    [InlineData("--seconds", "ten", "rpc-floor: --streams, --seconds and --rounds take a whole number")]
    [InlineData("--bogus", "1", "rpc-floor: unknown option '--bogus'")]
    public async Task TheTransportFloorRefusesBadOptionsBeforeItStartsAServer(string option, string value, string message)
    {
        var (code, output) = await RunAsync("rpc-floor", option, value);
        Assert.Equal(2, code);
        Assert.Contains(message, output, StringComparison.Ordinal);
        Assert.Contains("Usage: dotnet run -c Release --project benchmarks/Hyder.Benchmarks -- rpc-floor [options]", output, StringComparison.Ordinal);
        Assert.DoesNotContain("tx/s", output, StringComparison.Ordinal);
    }

    private static string CommandLine(string procDirectory)
    {
        try
        {
            return File.ReadAllText(Path.Combine(procDirectory, "cmdline"));
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException)
        {
            return string.Empty;
        }
    }

    private static async Task<(int Code, string Output)> RunAsync(params string[] args)
    {
        var configuration = new DirectoryInfo(Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory)).Parent!.Name;
        var dll = Path.Combine(BuiltProject.RepositoryRoot(), "benchmarks", "Hyder.Benchmarks", "bin", configuration, "net10.0", "Hyder.Benchmarks.dll");
        Assert.True(File.Exists(dll), $"{dll} is not built: build Hyder.sln ({configuration}) first");
        var (code, output, error) = await ChildProcess.RunAsync("dotnet", [dll, .. args], TimeSpan.FromSeconds(60));
        return (code, output + error);
    }
}
