using System.Diagnostics;
using System.Globalization;
using System.Text;

namespace Hyder.Soak;

/// <summary>
/// The soak's chart: resident set and disk of every process over time, drawn by gnuplot from
/// samples.csv into a PNG beside summary.md. When gnuplot is missing and this runs as root with
/// apt-get, it installs gnuplot-nox (as benchmarks/report.sh does); otherwise the chart is skipped
/// with a one-line note.
/// </summary>
internal static class Plot
{
    /// <summary>
    /// The gnuplot script for <paramref name="csv"/>: two panels, RSS of <paramref name="processes"/> and disk of
    /// <paramref name="disks"/>, in MiB over minutes. Each process's rows are picked with grep (a
    /// filter inside <c>using</c> would leave undefined points between them, which break its line).
    /// </summary>
    internal static string Script(string csv, string png, IReadOnlyList<string> processes, IReadOnlyList<string> disks)
    {
        static string Quote(string s) => "'" + s.Replace("'", "''", StringComparison.Ordinal) + "'";
        var text = new StringBuilder();
        text.AppendLine("if (strstrt(GPVAL_TERMINALS, 'pngcairo') > 0) { set terminal pngcairo size 1100,900 noenhanced } else { set terminal png size 1100,900 noenhanced }");
        text.AppendLine(CultureInfo.InvariantCulture, $"set output {Quote(png)}");
        text.AppendLine("set datafile separator ','");
        text.AppendLine("set key outside right");
        text.AppendLine("set grid");
        text.AppendLine("set multiplot layout 2,1");
        text.AppendLine("set xlabel 'minutes'");
        text.AppendLine("set ylabel 'resident set, MiB'");
        text.AppendLine("set title 'Resident set of every process (0 while a victim is down)'");
        text.AppendLine(CultureInfo.InvariantCulture, $"plot for [p in {Quote(string.Join(' ', processes))}] sprintf(\"< grep -F ',%s,' %s\", p, {Quote(csv)}) using ($1/60):($5/1048576) with lines title p");
        text.AppendLine("set ylabel 'on disk, MiB'");
        text.AppendLine("set title 'Bytes on disk of each data directory'");
        text.AppendLine(CultureInfo.InvariantCulture, $"plot for [p in {Quote(string.Join(' ', disks))}] sprintf(\"< grep -F ',%s,' %s\", p, {Quote(csv)}) using ($1/60):($9/1048576) with lines title p");
        text.AppendLine("unset multiplot");
        return text.ToString();
    }

    /// <summary>Draws the chart; returns the line summary.md gets (the image, or why there is none).</summary>
    public static async Task<string> WriteAsync(string csv, string png, IReadOnlyList<string> processes, IReadOnlyList<string> disks, CancellationToken cancellationToken)
    {
        if (!await HasGnuplotAsync(cancellationToken).ConfigureAwait(false) && !await InstallAsync(cancellationToken).ConfigureAwait(false))
        {
            return "Plot: skipped (gnuplot not found; Debian: apt-get install gnuplot-nox, or run the soak as root, which installs it).";
        }

        var (code, error) = await RunAsync("gnuplot", [], Script(Path.GetFullPath(csv), Path.GetFullPath(png), processes, disks), cancellationToken).ConfigureAwait(false);
        return code == 0 && File.Exists(png)
            ? $"![resident set and disk over time]({Path.GetFileName(png)})"
            : $"Plot: gnuplot failed ({code}): {error.Trim().ReplaceLineEndings(" ")}";
    }

    private static async Task<bool> HasGnuplotAsync(CancellationToken cancellationToken)
    {
        try
        {
            return (await RunAsync("gnuplot", ["--version"], null, cancellationToken).ConfigureAwait(false)).Code == 0;
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return false;
        }
    }

    private static async Task<bool> InstallAsync(CancellationToken cancellationToken)
    {
        if (!OperatingSystem.IsLinux() || Environment.UserName != "root" || !File.Exists("/usr/bin/apt-get"))
        {
            return false;
        }

        Console.WriteLine("hyder-soak: installing gnuplot-nox with apt-get for the plot");
        try
        {
            if ((await RunAsync("apt-get", ["update", "-qq"], null, cancellationToken).ConfigureAwait(false)).Code != 0)
            {
                return false;
            }

            return (await RunAsync("apt-get", ["install", "-y", "-qq", "--no-install-recommends", "gnuplot-nox"], null, cancellationToken).ConfigureAwait(false)).Code == 0
                && await HasGnuplotAsync(cancellationToken).ConfigureAwait(false);
        }
        catch (System.ComponentModel.Win32Exception)
        {
            return false;
        }
    }

    private static async Task<(int Code, string Error)> RunAsync(string file, string[] arguments, string? input, CancellationToken cancellationToken)
    {
        var info = new ProcessStartInfo(file) { RedirectStandardInput = true, RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
        info.Environment["DEBIAN_FRONTEND"] = "noninteractive";
        foreach (var argument in arguments)
        {
            info.ArgumentList.Add(argument);
        }

        using var process = Process.Start(info) ?? throw new InvalidOperationException($"could not start {file}");
        var output = process.StandardOutput.ReadToEndAsync(cancellationToken);
        var error = process.StandardError.ReadToEndAsync(cancellationToken);
        if (input is not null)
        {
            await process.StandardInput.WriteAsync(input.AsMemory(), cancellationToken).ConfigureAwait(false);
        }

        process.StandardInput.Close();
        await process.WaitForExitAsync(cancellationToken).ConfigureAwait(false);
        await output.ConfigureAwait(false);
        return (process.ExitCode, await error.ConfigureAwait(false));
    }
}
