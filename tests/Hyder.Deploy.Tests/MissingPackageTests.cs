using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>What a test that needs a missing Debian package prints: one line naming the package and the setup command.</summary>
public sealed class MissingPackageTests
{
    [Fact]
    public void AMissingProgramFailsWithOneLineThatNamesItsPackageAndNoStackTrace()
    {
        var e = Assert.Throws<MissingPackageException>(() => MissingPackageException.ThrowIfNotFound("hyder-no-such-program", "hyder-some-package"));
        Assert.DoesNotContain('\n', e.Message);
        Assert.Contains("sudo apt-get install -y hyder-some-package", e.Message, StringComparison.Ordinal);
        Assert.Contains(MissingPackageException.SetupCommand, e.Message, StringComparison.Ordinal);
        Assert.Null(e.StackTrace);
    }

    [Fact]
    public void AProgramOnThePathIsFound()
    {
        MissingPackageException.ThrowIfNotFound("sh", "dash");
        Assert.True(MissingPackageException.IsInstalled("/bin/sh"));
        Assert.False(MissingPackageException.IsInstalled("/nonexistent/hyder"));
    }

    [Fact]
    public void TheSetupCommandIsTheReadmesTestCommandAndCiRunsIt()
    {
        var root = BuiltProject.RepositoryRoot();
        Assert.Contains($"{MissingPackageException.SetupCommand}\n", File.ReadAllText(Path.Combine(root, "README.md")), StringComparison.Ordinal);
        Assert.Contains($"exec {MissingPackageException.SetupCommand}", File.ReadAllText(Path.Combine(root, ".ci", "run")), StringComparison.Ordinal);
        Assert.True(File.Exists(Path.Combine(root, MissingPackageException.SetupCommand)));
    }
}
