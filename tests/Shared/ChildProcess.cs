using System.Diagnostics;

namespace Hyder.Testing;

/// <summary>A program a test runs to its end: exit code, standard output and standard error.</summary>
internal static class ChildProcess
{
    /// <summary>
    /// Runs <paramref name="fileName"/> with <paramref name="arguments"/> and waits for it; past
    /// <paramref name="timeout"/> it is killed with everything it started, and the wait throws.
    /// </summary>
    public static async Task<(int Code, string Output, string Error)> RunAsync(string fileName, IEnumerable<string> arguments, TimeSpan timeout)
    {
        var start = new ProcessStartInfo(fileName) { RedirectStandardOutput = true, RedirectStandardError = true };
        foreach (var argument in arguments)
        {
            start.ArgumentList.Add(argument);
        }

        using var process = Process.Start(start)!;
        using var limit = new CancellationTokenSource(timeout);
        var output = process.StandardOutput.ReadToEndAsync(limit.Token);
        var error = process.StandardError.ReadToEndAsync(limit.Token);
        try
        {
            await process.WaitForExitAsync(limit.Token);
        }
        catch (OperationCanceledException)
        {
            process.Kill(entireProcessTree: true);
            throw;
        }

        return (process.ExitCode, await output, await error);
    }
}
