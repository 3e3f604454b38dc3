using System.Diagnostics;
using Hyder.Testing;
using Xunit;

namespace Hyder.Processes.Tests;

/// <summary>
/// The server benchmark's command line (benchmarks/Hyder.Benchmarks, `server`): `--help` prints
/// the options and runs nothing, and an option it does not know stops it before it runs for five
/// minutes and writes a report. (A mistyped option used to be ignored: `server --help` ran the
/// whole benchmark.)
/// </summary>
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

    private static async Task<(int Code, string Output)> RunAsync(params string[] args)
    {
        var configuration = new DirectoryInfo(Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory)).Parent!.Name;
        var dll = Path.Combine(BuiltProject.RepositoryRoot(), "benchmarks", "Hyder.Benchmarks", "bin", configuration, "net10.0", "Hyder.Benchmarks.dll");
        Assert.True(File.Exists(dll), $"{dll} is not built: build Hyder.sln ({configuration}) first");
        var start = new ProcessStartInfo("dotnet") { RedirectStandardOutput = true, RedirectStandardError = true };
        start.ArgumentList.Add(dll);
        foreach (var a in args)
        {
            start.ArgumentList.Add(a);
        }

        using var process = Process.Start(start)!;
        using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(60));
        var stdout = process.StandardOutput.ReadToEndAsync(timeout.Token);
        var stderr = process.StandardError.ReadToEndAsync(timeout.Token);
        try
        {
            await process.WaitForExitAsync(timeout.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            throw;
        }

        return (process.ExitCode, await stdout + await stderr);
    }
}
