using System.Text.RegularExpressions;
using Hyder.Testing;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>The files under deploy/windows, read as text (PowerShell is not on these machines).</summary>
internal static partial class WindowsDeployFiles
{
    public static string Directory => Path.Combine(BuiltProject.RepositoryRoot(), "deploy", "windows");

    public static string Read(string name) => File.ReadAllText(Path.Combine(Directory, name));

    /// <summary>The programs install.ps1 installs: (folder, app host) from its <c>$Programs</c> table.</summary>
    public static List<(string Folder, string Exe)> Programs() =>
        [.. ProgramEntry().Matches(Read("install.ps1")).Select(m => (m.Groups["folder"].Value, m.Groups["exe"].Value))];

    /// <summary>The names of a script's parameters, from its <c>param(...)</c> block.</summary>
    public static List<string> Parameters(string script)
    {
        var text = Read(script);
        var start = text.IndexOf("param(", StringComparison.Ordinal);
        var end = text.IndexOf("\n)", start, StringComparison.Ordinal);
        return [.. ParameterName().Matches(text[start..end]).Select(m => m.Groups["name"].Value)];
    }

    [GeneratedRegex(@"Folder = '(?<folder>[^']+)'; Exe = '(?<exe>[^']+)'")]
    private static partial Regex ProgramEntry();

    [GeneratedRegex(@"^\s*\[[^\n]*?\]\s*\$(?<name>\w+)", RegexOptions.Multiline)]
    private static partial Regex ParameterName();
}
