using System.Text.Json;
using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>
/// The default test run (tools/test.sh, what CI runs) includes a Debug pass of the engine's, the
/// log's and the server's tests, where the Debug-tier invariant checks run (docs/CONTRIBUTING.md).
/// </summary>
public sealed class DebugPassTests
{
    [Fact]
    public void TheDefaultTestRunHasADebugPassOfTheEngineLogAndServerTests()
    {
        var root = BuiltProject.RepositoryRoot();
        var script = File.ReadAllText(Path.Combine(root, "tools", "test.sh"));
        Assert.Contains("dotnet test Hyder.sln -c Release --filter \"Category!=Stress\"", script, StringComparison.Ordinal);
        Assert.Contains("dotnet test Hyder.Debug.slnf -c Debug --filter \"Category!=Stress&Category!=ReleaseOnly&", script, StringComparison.Ordinal);

        using var filter = JsonDocument.Parse(File.ReadAllText(Path.Combine(root, "Hyder.Debug.slnf")));
        var projects = filter.RootElement.GetProperty("solution").GetProperty("projects").EnumerateArray()
            .Select(p => p.GetString()!.Replace('\\', '/'))
            .ToList();
        foreach (var tests in new[] { "Hyder.Tree.Tests", "Hyder.Log.Tests", "Hyder.Server.Tests" })
        {
            Assert.Contains($"tests/{tests}/{tests}.csproj", projects);
        }

        // Every project of the filter exists and is in the solution (a stale path fails the pass).
        var solution = File.ReadAllText(Path.Combine(root, "Hyder.sln"));
        Assert.All(projects, p =>
        {
            Assert.True(File.Exists(Path.Combine(root, p)), p);
            Assert.Contains(p.Replace('/', '\\'), solution, StringComparison.Ordinal);
        });
    }
}
