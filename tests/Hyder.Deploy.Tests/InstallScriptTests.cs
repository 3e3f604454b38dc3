using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>install.sh and uninstall.sh into a staging root (<c>--prefix</c>): files, modes, kept configuration, kept data.</summary>
public sealed class InstallScriptTests
{
    private static string Script(string name) => Path.Combine(DeployFiles.Directory, name);

    private static string Mode(string path) => Convert.ToString((int)File.GetUnixFileMode(path), 8);

    private static async Task<string> RunAsync(string script, params string[] args)
    {
        var (code, output) = await DeployFiles.RunAsync("bash", [Script(script), .. args]);
        Assert.True(code == 0, $"{script} {string.Join(' ', args)}: exit {code}\n{output}");
        return output;
    }

    [Fact]
    public async Task InstallWritesConfigurationDataDirectoriesAndUnitsWithTheirModes()
    {
        using var root = new TempDirectory("hyder-deploy-test-");
        await RunAsync("install.sh", "--prefix", root.Path, "--no-publish", "--log-units", "a b");
        string At(string relative) => Path.Combine(root.Path, relative);

        Assert.Equal("750", Mode(At("etc/hyder")));
        foreach (var config in new[] { "server.json", "projection.env", "sequencer.env", "log-unit-a.env", "log-unit-b.env" })
        {
            Assert.Equal("640", Mode(At("etc/hyder/" + config)));
        }

        Assert.Equal(File.ReadAllText(Script("server.sample.json")), File.ReadAllText(At("etc/hyder/server.json")));
        foreach (var data in new[] { "", "/server", "/projection", "/log-unit-a", "/log-unit-b" })
        {
            Assert.Equal("700", Mode(At("var/lib/hyder" + data)));
        }

        foreach (var unit in DeployFiles.Units)
        {
            var installed = At("etc/systemd/system/" + Path.GetFileName(unit));
            Assert.Equal("644", Mode(installed));
            Assert.Contains($"ExecStart={DeployFiles.Dotnet()} /opt/hyder/", File.ReadAllText(installed), StringComparison.Ordinal);
        }

        Assert.True(File.Exists(At("opt/hyder/share/samples/server.sample.json")));
    }

    [Fact]
    public async Task ASecondInstallKeepsEditedConfigurationAndADryRunChangesNothing()
    {
        using var root = new TempDirectory("hyder-deploy-test-");
        await RunAsync("install.sh", "--prefix", root.Path, "--no-publish");
        var config = Path.Combine(root.Path, "etc/hyder/server.json");
        File.WriteAllText(config, "{ \"ServerId\": \"edited\" }");

        var again = await RunAsync("install.sh", "--prefix", root.Path, "--no-publish");
        Assert.Contains("keeping " + config, again, StringComparison.Ordinal);
        Assert.Equal("{ \"ServerId\": \"edited\" }", File.ReadAllText(config));

        using var empty = new TempDirectory("hyder-deploy-test-");
        var dry = await RunAsync("install.sh", "--prefix", empty.Path, "--dry-run");
        Assert.Contains("dotnet publish", dry, StringComparison.Ordinal);
        Assert.Contains("systemctl daemon-reload", dry, StringComparison.Ordinal);
        Assert.Empty(Directory.EnumerateFileSystemEntries(empty.Path));
    }

    [Fact]
    public async Task UninstallKeepsTheDataUnlessPurged()
    {
        using var root = new TempDirectory("hyder-deploy-test-");
        await RunAsync("install.sh", "--prefix", root.Path, "--no-publish");
        var segment = Path.Combine(root.Path, "var/lib/hyder/server/segment-0");
        File.WriteAllText(segment, "data");

        await RunAsync("uninstall.sh", "--prefix", root.Path);
        Assert.False(Directory.Exists(Path.Combine(root.Path, "opt/hyder")));
        Assert.Empty(Directory.EnumerateFiles(Path.Combine(root.Path, "etc/systemd/system")));
        Assert.True(File.Exists(segment));
        Assert.True(File.Exists(Path.Combine(root.Path, "etc/hyder/server.json")));

        await RunAsync("uninstall.sh", "--prefix", root.Path, "--purge");
        Assert.False(Directory.Exists(Path.Combine(root.Path, "var/lib/hyder")));
        Assert.False(Directory.Exists(Path.Combine(root.Path, "etc/hyder")));
    }
}
