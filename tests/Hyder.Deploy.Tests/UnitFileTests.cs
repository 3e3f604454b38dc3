using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>Every unit under deploy/linux: <c>systemd-analyze verify</c> accepts it without a word, and it carries the hardening the issue asks for.</summary>
public sealed class UnitFileTests
{
    public static TheoryData<string> Units => [.. DeployFiles.Units.Select(Path.GetFileName).OfType<string>()];

    [Fact]
    public void EveryRoleHasAUnit()
    {
        Assert.Equal(
            ["hyder-log-unit@.service", "hyder-projection.service", "hyder-sequencer.service", "hyder-server.service", "hyder-server@.service"],
            DeployFiles.Units.Select(Path.GetFileName));
    }

    [Theory]
    [MemberData(nameof(Units))]
    public async Task SystemdAnalyzeVerifiesTheUnitWithoutWarnings(string name)
    {
        // A copy whose ExecStart runs this machine's dotnet (verify checks the executable); a
        // template is verified as an instance so its %i specifiers expand.
        using var directory = new TempDirectory("hyder-deploy-test-");
        var instance = name.EndsWith("@.service", StringComparison.Ordinal) ? name.Replace("@.service", "@test.service", StringComparison.Ordinal) : name;
        var text = File.ReadAllText(Path.Combine(DeployFiles.Directory, name)).Replace("ExecStart=/usr/bin/dotnet ", $"ExecStart={DeployFiles.Dotnet()} ", StringComparison.Ordinal);
        File.WriteAllText(Path.Combine(directory.Path, instance), text);

        var (code, output) = await DeployFiles.RunAsync("systemd-analyze", ["verify", "--man=no", instance], directory.Path);

        // verify exits 0 on unknown keys and bad values (it ignores them): any output fails.
        Assert.True(code == 0 && output.Trim().Length == 0, $"systemd-analyze verify {name}: exit {code}\n{output}");
    }

    [Theory]
    [MemberData(nameof(Units))]
    public void TheUnitIsANotifyServiceHardenedToItsDataDirectory(string name)
    {
        var directives = DeployFiles.Directives(Path.Combine(DeployFiles.Directory, name));
        string Single(string key)
        {
            var values = directives.Where(d => d.Key == key).Select(d => d.Value).ToList();
            Assert.True(values.Count == 1, $"{name}: {key}= appears {values.Count} times");
            return values[0];
        }

        Assert.Equal("notify", Single("Type"));
        Assert.Equal("hyder", Single("User"));
        Assert.Equal("strict", Single("ProtectSystem"));
        Assert.Equal("yes", Single("NoNewPrivileges"));
        Assert.Equal("yes", Single("PrivateTmp"));
        Assert.Equal(string.Empty, Single("CapabilityBoundingSet"));
        Assert.Equal("65536", Single("LimitNOFILE"));
        Assert.Equal("on-failure", Single("Restart"));
        Assert.NotEmpty(Single("TimeoutStopSec"));
        Assert.NotEmpty(Single("WatchdogSec"));
        Assert.StartsWith("/usr/bin/dotnet /opt/hyder/", Single("ExecStart"), StringComparison.Ordinal);

        // The one writable path is the unit's own state directory, mode 0700; the sequencer keeps none.
        var writable = directives.Where(d => d.Key == "ReadWritePaths").Select(d => d.Value).ToList();
        var state = directives.Where(d => d.Key == "StateDirectory").Select(d => d.Value).ToList();
        if (name == "hyder-sequencer.service")
        {
            Assert.Empty(writable);
            Assert.Empty(state);
        }
        else
        {
            Assert.Equal(["/var/lib/" + Single("StateDirectory")], writable);
            Assert.Equal("0700", Single("StateDirectoryMode"));
        }
    }

    [Fact]
    public void TheServerTemplateKeepsEachInstanceInItsOwnConfigurationAndData()
    {
        var directives = DeployFiles.Directives(Path.Combine(DeployFiles.Directory, "hyder-server@.service"));
        Assert.Contains(directives, d => d.Key == "ExecStart" && d.Value.EndsWith("--config /etc/hyder/server-%i.json", StringComparison.Ordinal));
        Assert.Contains(("StateDirectory", "hyder/server-%i"), directives);
        Assert.Contains(("ReadWritePaths", "/var/lib/hyder/server-%i"), directives);
    }
}
