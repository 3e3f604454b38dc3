using System.Xml.Linq;
using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>
/// The project-reference rules of docs/CONTRIBUTING.md ("Forbidden references"), read from every
/// project file in the repository: the engine stands alone, the log knows no Hyder project, the
/// client ships without the server, and dependencies run one way (tests → tools, benchmarks → src).
/// </summary>
public sealed class ProjectReferenceRulesTests
{
    private static readonly Lazy<IReadOnlyDictionary<string, ProjectFile>> s_projects = new(() => ProjectFile.All(BuiltProject.RepositoryRoot()));

    private static IReadOnlyDictionary<string, ProjectFile> Projects => s_projects.Value;

    [Fact]
    public void TheReaderFindsEveryFolderAndResolvesReferencesToRepositoryPaths()
    {
        // Guards the rules below against passing on an empty reading.
        Assert.Contains("src/Hyder.Tree", Projects.Keys);
        Assert.Contains("tools/Hyder.Simulation", Projects.Keys);
        Assert.Contains("tests/Hyder.Simulation.Tests", Projects.Keys);
        Assert.Equal(["src/Hyder.Doppel", "src/Hyder.Log", "src/Hyder.Tree"], Projects["src/Hyder.Server"].References.Order(StringComparer.Ordinal));
        Assert.Contains("tools/Hyder.Simulation", Projects["tests/Hyder.Simulation.Tests"].References);
    }

    [Fact]
    public void TheEngineReferencesNoProjectAndNoPackage()
    {
        Assert.Empty(Projects["src/Hyder.Tree"].References);
        Assert.Empty(Projects["src/Hyder.Tree"].Packages);
        Assert.Equal(["src/Hyder.Tree"], Projects["src/Hyder.Doppel"].References);
    }

    [Fact]
    public void TheLogApiAndSecurityReferenceNoHyderProject()
    {
        Assert.Empty(Projects["src/Hyder.Log"].References);
        Assert.Empty(Projects["src/Hyder.Api"].References);
        Assert.Empty(Projects["src/Hyder.Security"].References);
    }

    [Fact]
    public void TheServerKnowsNothingOfTheWireAndTheClientNothingOfTheServer()
    {
        Assert.Subset(new HashSet<string>(["src/Hyder.Tree", "src/Hyder.Doppel", "src/Hyder.Log"]), Projects["src/Hyder.Server"].References.ToHashSet());
        Assert.Subset(new HashSet<string>(["src/Hyder.Api", "src/Hyder.Security"]), Projects["src/Hyder.Client"].References.ToHashSet());
    }

    [Fact]
    public void ALogHostRunsNoTransactionServerNotEvenThroughAnotherProject()
    {
        Assert.DoesNotContain("src/Hyder.Server", Closure("src/Hyder.Log.Host"));
    }

    [Theory]
    [InlineData("src/", new[] { "tests/", "tools/", "benchmarks/" })]
    [InlineData("tools/", new[] { "tests/" })]
    [InlineData("benchmarks/", new[] { "tests/" })]
    public void DependenciesRunOneWay(string from, string[] never)
    {
        var wrong = Projects.Values
            .Where(p => p.Folder.StartsWith(from, StringComparison.Ordinal))
            .SelectMany(p => p.References.Where(r => never.Any(n => r.StartsWith(n, StringComparison.Ordinal))).Select(r => $"{p.Folder} → {r}"))
            .ToList();
        Assert.Empty(wrong);
    }

    [Fact]
    public void ARuleBreakIsSeen()
    {
        // The reader on a project of its own making, so a broken resolution cannot hide a violation.
        using var temp = new TempDirectory();
        Directory.CreateDirectory(Path.Combine(temp.Path, "tools", "Hyder.Bad"));
        Directory.CreateDirectory(Path.Combine(temp.Path, "tests", "Hyder.Helper"));
        File.WriteAllText(Path.Combine(temp.Path, "tools", "Hyder.Bad", "Hyder.Bad.csproj"),
            """<Project><ItemGroup><ProjectReference Include="../../tests/Hyder.Helper/Hyder.Helper.csproj" /><PackageReference Include="Some.Package" /></ItemGroup></Project>""");
        File.WriteAllText(Path.Combine(temp.Path, "tests", "Hyder.Helper", "Hyder.Helper.csproj"), "<Project />");

        var projects = ProjectFile.All(temp.Path);

        Assert.Equal(["tests/Hyder.Helper"], projects["tools/Hyder.Bad"].References);
        Assert.Equal(["Some.Package"], projects["tools/Hyder.Bad"].Packages);
    }

    private static HashSet<string> Closure(string folder)
    {
        var seen = new HashSet<string>(StringComparer.Ordinal);
        var stack = new Stack<string>([folder]);
        while (stack.TryPop(out var next))
        {
            foreach (var reference in Projects[next].References)
            {
                if (seen.Add(reference))
                {
                    stack.Push(reference);
                }
            }
        }

        return seen;
    }

    /// <summary>One project file: its folder relative to the root, the folders it references and the packages it names.</summary>
    private sealed record ProjectFile(string Folder, IReadOnlyList<string> References, IReadOnlyList<string> Packages)
    {
        public static IReadOnlyDictionary<string, ProjectFile> All(string root)
        {
            var result = new Dictionary<string, ProjectFile>(StringComparer.Ordinal);
            foreach (var top in new[] { "src", "tools", "tests", "benchmarks" })
            {
                var dir = Path.Combine(root, top);
                if (!Directory.Exists(dir))
                {
                    continue;
                }

                foreach (var file in Directory.EnumerateFiles(dir, "*.csproj", SearchOption.AllDirectories))
                {
                    if (file.Contains($"{Path.DirectorySeparatorChar}obj{Path.DirectorySeparatorChar}", StringComparison.Ordinal)
                        || file.Contains($"{Path.DirectorySeparatorChar}bin{Path.DirectorySeparatorChar}", StringComparison.Ordinal))
                    {
                        continue;
                    }

                    var project = Read(root, file);
                    result.Add(project.Folder, project);
                }
            }

            return result;
        }

        private static ProjectFile Read(string root, string file)
        {
            var xml = XDocument.Load(file);
            var folder = Path.GetDirectoryName(file)!;
            var references = xml.Descendants("ProjectReference")
                .Select(e => Relative(root, Path.GetDirectoryName(Path.GetFullPath(Path.Combine(folder, e.Attribute("Include")!.Value.Replace('\\', '/'))))!))
                .ToList();
            var packages = xml.Descendants("PackageReference").Select(e => e.Attribute("Include")!.Value).ToList();
            return new ProjectFile(Relative(root, folder), references, packages);
        }

        private static string Relative(string root, string path) => Path.GetRelativePath(root, path).Replace('\\', '/');
    }
}
