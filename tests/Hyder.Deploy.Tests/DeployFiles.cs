using System.Diagnostics;
using Hyder.Testing;

namespace Hyder.Deploy.Tests;

/// <summary>The files under deploy/linux and the tools the tests run on them.</summary>
internal static class DeployFiles
{
    public static string Directory => Path.Combine(BuiltProject.RepositoryRoot(), "deploy", "linux");

    /// <summary>Every unit file shipped.</summary>
    public static string[] Units => [.. System.IO.Directory.GetFiles(Directory, "*.service").Order(StringComparer.Ordinal)];

    /// <summary>The <c>Key=value</c> lines of a unit file's sections, in order (a key may repeat).</summary>
    public static List<(string Key, string Value)> Directives(string unitFile) =>
        [.. File.ReadAllLines(unitFile)
            .Where(l => l.Length > 0 && l[0] is not ('#' or ';' or '[') && l.Contains('=', StringComparison.Ordinal))
            .Select(l => (l[..l.IndexOf('=', StringComparison.Ordinal)].Trim(), l[(l.IndexOf('=', StringComparison.Ordinal) + 1)..].Trim()))];

    /// <summary>Runs a program to completion (60 s unless <paramref name="timeout"/> says otherwise); returns its exit code and its stdout and stderr together.</summary>
    public static async Task<(int ExitCode, string Output)> RunAsync(string program, IEnumerable<string> args, string? workingDirectory = null, TimeSpan? timeout = null)
    {
        var info = new ProcessStartInfo(program)
        {
            RedirectStandardOutput = true,
            RedirectStandardError = true,
            UseShellExecute = false,
            WorkingDirectory = workingDirectory ?? Environment.CurrentDirectory,
        };
        foreach (var arg in args)
        {
            info.ArgumentList.Add(arg);
        }

        if (program == "systemd-analyze")
        {
            MissingPackageException.ThrowIfNotFound(program, "systemd");
        }

        using (var process = Process.Start(info)!)
        {
            var stdout = process.StandardOutput.ReadToEndAsync();
            var stderr = process.StandardError.ReadToEndAsync();
            await process.WaitForExitAsync().WaitAsync(timeout ?? TimeSpan.FromSeconds(60));
            return (process.ExitCode, (await stdout) + (await stderr));
        }
    }

    /// <summary>The absolute path of the dotnet running the tests (the one units of this machine would start).</summary>
    public static string Dotnet()
    {
        var candidate = Environment.ProcessPath is { } path && Path.GetFileNameWithoutExtension(path) == "dotnet"
            ? path
            : Environment.GetEnvironmentVariable("DOTNET_HOST_PATH") ?? "/usr/bin/dotnet";
        return new FileInfo(candidate).ResolveLinkTarget(returnFinalTarget: true)?.FullName ?? candidate;
    }
}
