using System.Text.Json;
using System.Text.RegularExpressions;
using Xunit;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>install.ps1, uninstall.ps1, the samples and the README of deploy/windows, checked as text.</summary>
public sealed partial class WindowsScriptTests
{
    private static readonly string s_install = WindowsDeployFiles.Read("install.ps1");
    private static readonly string s_uninstall = WindowsDeployFiles.Read("uninstall.ps1");

    [Fact]
    public void InstallKnowsBothHostsAppHosts()
    {
        Assert.Equal([("server", "hyder-server.exe"), ("log", "Hyder.Log.Host.exe")], WindowsDeployFiles.Programs());
    }

    [Fact]
    public void EveryServiceIsCreatedWithTheCommandLineThatStartsWithTheAppHostAndService()
    {
        // One place builds the command line: the app host, quoted, then --service first.
        Assert.Contains("$arguments = @('--service', '--event-source', $service.Name, '--log-target', $LogTarget)", s_install, StringComparison.Ordinal);
        Assert.Contains("return \"`\"$exe`\" \" + ($quoted -join ' ')", s_install, StringComparison.Ordinal);
        Assert.Contains("$exe = Join-Path (Join-Path $InstallDir $program.Folder) $program.Exe", s_install, StringComparison.Ordinal);

        // Every way a service gets its command line uses it.
        Assert.Equal(["New-Service @new"], NewService().Matches(s_install).Select(m => m.Value));
        Assert.Contains("$new = @{ Name = $name; BinaryPathName = $commandLine;", s_install, StringComparison.Ordinal);
        Assert.Contains("-Name ImagePath -Value $commandLine", s_install, StringComparison.Ordinal);
        Assert.Contains("$commandLine = Get-CommandLine $service", s_install, StringComparison.Ordinal);
        foreach (var role in new[] { "'server'", "'projection'", "'sequencer'", "'log-unit'" })
        {
            Assert.Contains(role + " {", s_install, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void ServicesGetRecoveryActionsTheFailureFlagAndTheirOwnAccount()
    {
        Assert.Matches(@"sc\.exe failure \$name reset= \d+ actions= restart/\d+/restart/\d+/restart/\d+ ", s_install);
        Assert.Contains("sc.exe failureflag $name 1", s_install, StringComparison.Ordinal);
        Assert.Contains("return \"NT SERVICE\\$($service.Name)\"", s_install, StringComparison.Ordinal);
        Assert.Contains("sc.exe config $name obj= $account", s_install, StringComparison.Ordinal);
        Assert.Contains("sc.exe sidtype $name unrestricted", s_install, StringComparison.Ordinal);
    }

    [Fact]
    public void DataLogAndConfigurationAclsGrantOnlyTheAccountSystemAndAdministratorsWithInheritanceOff()
    {
        var icacls = Icacls().Matches(s_install).Select(m => m.Value).ToList();
        Assert.Equal(2, icacls.Count);
        foreach (var line in icacls)
        {
            Assert.Contains("/inheritance:r /grant:r \"${account}:", line, StringComparison.Ordinal);
            var grants = Grant().Matches(line).Select(m => m.Groups["who"].Value).ToList();
            Assert.Equal(["${account}", "${System}", "${Administrators}"], grants);
        }

        Assert.Contains("$System = '*S-1-5-18'", s_install, StringComparison.Ordinal);
        Assert.Contains("$Administrators = '*S-1-5-32-544'", s_install, StringComparison.Ordinal);
        Assert.Contains("if ($service.Data) { $directories += $dataDir }", s_install, StringComparison.Ordinal);
    }

    [Fact]
    public void EveryChangeCanBePreviewedWithDryRun()
    {
        foreach (var script in new[] { s_install, s_uninstall })
        {
            Assert.Contains("$global:LASTEXITCODE = 0\n", script.ReplaceLineEndings("\n"), StringComparison.Ordinal);
            Assert.Contains("function Invoke-Step([string] $Description, [scriptblock] $Action) {\n    Write-Host \"+ $Description\"\n    if (-not $DryRun) {", script.ReplaceLineEndings("\n"), StringComparison.Ordinal);
            // Nothing changes the machine outside Invoke-Step.
            foreach (var line in script.Split('\n'))
            {
                if (Changing().IsMatch(line))
                {
                    Assert.True(line.TrimStart().StartsWith('{') || line.Contains("Invoke-Step", StringComparison.Ordinal) || IsInsideStep(script, line), $"outside Invoke-Step: {line.Trim()}");
                }
            }
        }
    }

    [Fact]
    public void UninstallKeepsTheDataUnlessRemoveDataIsGiven()
    {
        var lines = s_uninstall.Split('\n');
        var removals = lines.Select((l, i) => (l, i)).Where(x => x.l.Contains("Remove-Item -Path $ConfigDir", StringComparison.Ordinal)).ToList();
        var removal = Assert.Single(removals);
        var guard = lines.Take(removal.i).Last(l => l.TrimStart().StartsWith("if (", StringComparison.Ordinal) && !l.Contains("Test-Path", StringComparison.Ordinal));
        Assert.Equal("if ($RemoveData) {", guard.Trim());
        Assert.Contains("[switch] $RemoveData", s_uninstall, StringComparison.Ordinal);
        Assert.Contains("Get-Service -Name 'hyder-*'", s_uninstall, StringComparison.Ordinal);
        Assert.Contains("sc.exe delete $name", s_uninstall, StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("install.ps1")]
    [InlineData("uninstall.ps1")]
    public void TheReadmeDocumentsEveryParameter(string script)
    {
        var readme = WindowsDeployFiles.Read("README.md");
        var parameters = WindowsDeployFiles.Parameters(script);
        Assert.Equal(
            script == "install.ps1"
                ? ["Published", "InstallDir", "ConfigDir", "Roles", "LogUnits", "Account", "Credential", "LogTarget", "NoStart", "DryRun"]
                : ["InstallDir", "ConfigDir", "RemoveData", "DryRun"],
            parameters);
        foreach (var parameter in parameters)
        {
            Assert.Contains($"| `-{parameter}", readme, StringComparison.Ordinal);
        }
    }

    [Fact]
    public void TheSamplesParseAndHoldWhatInstallReads()
    {
        var server = JsonDocument.Parse(WindowsDeployFiles.Read("server.sample.json")).RootElement;
        Assert.True(server.GetProperty("Log").GetProperty("Embedded").GetBoolean());
        Assert.Equal(@"C:\ProgramData\Hyder\data\hyder-server", server.GetProperty("Log").GetProperty("Data").GetString());
        foreach (var sample in new[] { "projection.sample.json", "sequencer.sample.json", "log-unit.sample.json" })
        {
            var log = JsonDocument.Parse(WindowsDeployFiles.Read(sample)).RootElement;
            Assert.False(string.IsNullOrEmpty(log.GetProperty("Listen").GetString()));
            Assert.InRange(log.GetProperty("Port").GetInt32(), 1, 65535);
            Assert.Equal(JsonValueKind.Array, log.GetProperty("Options").ValueKind);
            Assert.Contains($"'{sample}'", s_install, StringComparison.Ordinal);
        }

        Assert.StartsWith("tcp:", JsonDocument.Parse(WindowsDeployFiles.Read("sequencer.sample.json")).RootElement.GetProperty("ProjectionStore").GetString(), StringComparison.Ordinal);
    }

    /// <summary>Whether <paramref name="line"/> lies inside an Invoke-Step block: its braces opened after the last Invoke-Step before it.</summary>
    private static bool IsInsideStep(string script, string line)
    {
        var at = script.IndexOf(line, StringComparison.Ordinal);
        var step = script.LastIndexOf("Invoke-Step \"", at, StringComparison.Ordinal);
        if (step < 0)
        {
            return false;
        }

        var depth = 0;
        for (var i = script.IndexOf('{', step); i >= 0 && i < at; i++)
        {
            depth += script[i] switch { '{' => 1, '}' => -1, _ => 0 };
        }

        return depth > 0;
    }

    /// <summary>New-Service as a command, not in a step's printed description.</summary>
    [GeneratedRegex(@"(?<=\{ )New-Service @?\w+")]
    private static partial Regex NewService();

    [GeneratedRegex(@"^\s*icacls .*$", RegexOptions.Multiline)]
    private static partial Regex Icacls();

    [GeneratedRegex(@"""(?<who>\$\{\w+\}):")]
    private static partial Regex Grant();

    [GeneratedRegex(@"^\s*(New-Service|Remove-Item|Copy-Item|New-Item|New-ItemProperty|Set-ItemProperty|Set-Content|Stop-Service|Start-Service|icacls|sc\.exe|dotnet publish)\b")]
    private static partial Regex Changing();
}
