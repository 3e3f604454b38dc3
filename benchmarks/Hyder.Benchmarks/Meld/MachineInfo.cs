using System.Diagnostics;
using System.Runtime;
using System.Runtime.InteropServices;

namespace Hyder.Benchmarks.Meld;

/// <summary>The machine and runtime a report was measured on, read from /proc and the runtime.</summary>
public sealed record MachineInfo(string Cpu, int Cores, string Memory, string Caches, string Os, string Runtime, string Gc, string Commit)
{
    /// <summary>Reads the machine's description.</summary>
    public static MachineInfo Capture() => new(
        CpuModel(),
        Environment.ProcessorCount,
        MemoryTotal(),
        ReadCaches(),
        OsName(),
        RuntimeInformation.FrameworkDescription,
        $"{(GCSettings.IsServerGC ? "server" : "workstation")}, {GCSettings.LatencyMode}",
        GitCommit());

    /// <summary>The lines every report opens with: when, at which commit, on what machine, under what load, how long.</summary>
    public void AppendRunLines(System.Text.StringBuilder sb, TimeSpan took)
    {
        var inv = System.Globalization.CultureInfo.InvariantCulture;
        sb.Append(inv, $"- Date: {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC, commit `{Commit}`\n");
        sb.Append(inv, $"- Machine: {Cpu}, {Cores} cores, {Memory}; {Os}; {Runtime}, {Gc} GC\n");
        sb.Append(inv, $"- Load average after the run: {LoadAverage()}; run took {took:mm\\:ss}\n\n");
    }

    /// <summary>The 1-, 5- and 15-minute load averages (Linux), or "unknown".</summary>
    public static string LoadAverage() =>
        TryRead("/proc/loadavg") is { } s ? string.Join(' ', s.Split(' ').Take(3)) : "unknown";

    private static string CpuModel()
    {
        var lines = TryRead("/proc/cpuinfo")?.Split('\n') ?? [];
        var model = lines.FirstOrDefault(l => l.StartsWith("model name", StringComparison.Ordinal))?.Split(':', 2)[1].Trim() ?? RuntimeInformation.ProcessArchitecture.ToString();
        var virtualized = lines.Any(l => l.StartsWith("flags", StringComparison.Ordinal) && l.Contains(" hypervisor", StringComparison.Ordinal));
        return virtualized ? $"{model} (virtual machine)" : model;
    }

    private static string MemoryTotal()
    {
        var line = TryRead("/proc/meminfo")?.Split('\n').FirstOrDefault(l => l.StartsWith("MemTotal:", StringComparison.Ordinal));
        return line is not null && long.TryParse(line.Split(' ', StringSplitOptions.RemoveEmptyEntries)[1], out var kb)
            ? $"{kb / (1024.0 * 1024.0):F1} GiB"
            : "unknown";
    }

    private static string ReadCaches()
    {
        var parts = new List<string>();
        for (var i = 0; i < 8; i++)
        {
            var dir = $"/sys/devices/system/cpu/cpu0/cache/index{i}";
            var level = TryRead($"{dir}/level")?.Trim();
            var type = TryRead($"{dir}/type")?.Trim();
            var size = TryRead($"{dir}/size")?.Trim();
            if (level is null || size is null)
            {
                break;
            }

            parts.Add($"L{level}{(type == "Data" ? "d" : type == "Instruction" ? "i" : string.Empty)} {size}");
        }

        return parts.Count == 0 ? "unknown" : string.Join(", ", parts);
    }

    private static string OsName()
    {
        var pretty = TryRead("/etc/os-release")?.Split('\n').FirstOrDefault(l => l.StartsWith("PRETTY_NAME=", StringComparison.Ordinal));
        var name = pretty?.Split('=', 2)[1].Trim('"') ?? RuntimeInformation.OSDescription;
        var kernel = TryRead("/proc/sys/kernel/osrelease")?.Trim();
        return kernel is null ? name : $"{name}, Linux kernel {kernel}";
    }

    /// <summary>HEAD, and whether the engine sources differ from it (other engineers work in the same tree).</summary>
    private static string GitCommit()
    {
        var head = Git("rev-parse --short HEAD");
        if (head is null)
        {
            return "unknown";
        }

        var dirty = Git("status --porcelain -- src");
        return string.IsNullOrWhiteSpace(dirty) ? head : $"{head} with uncommitted changes under src/";
    }

    private static string? Git(string arguments)
    {
        try
        {
            using var git = Process.Start(new ProcessStartInfo("git", arguments) { RedirectStandardOutput = true, RedirectStandardError = true });
            if (git is null)
            {
                return null;
            }

            var output = git.StandardOutput.ReadToEnd().Trim();
            git.WaitForExit();
            return git.ExitCode == 0 ? output : null;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return null;
        }
    }

    private static string? TryRead(string path)
    {
        try
        {
            return File.Exists(path) ? File.ReadAllText(path) : null;
        }
        catch (IOException)
        {
            return null;
        }
        catch (UnauthorizedAccessException)
        {
            return null;
        }
    }
}
