using System.Text.RegularExpressions;
using Hyder.Log.Transport;
using Hyder.Testing;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>
/// Layering inside Hyder.Log: <c>Hyder.Log.Transport</c> carries projections and so depends on
/// <c>Hyder.Log.Layout</c>; Layout must not depend on Transport back (docs/CONTRIBUTING.md, the map).
/// One assembly cannot enforce that, so this test reads the sources.
/// </summary>
public sealed class LayoutNamespaceTests
{
    [Fact]
    public void NoLayoutSourceNamesTheTransportNamespaceOrOneOfItsTypes()
    {
        var layout = Path.Combine(BuiltProject.RepositoryRoot(), "src", "Hyder.Log", "Layout");
        var files = Directory.GetFiles(layout, "*.cs", SearchOption.AllDirectories);
        Assert.Contains(files, f => Path.GetFileName(f) == "IProjectionStore.cs");

        // Every top-level type the assembly declares in Transport, ProjectionStoreSpec included.
        var transportTypes = typeof(RemoteProjectionStore).Assembly.GetTypes()
            .Where(t => t.Namespace == "Hyder.Log.Transport" && !t.IsNested && !t.Name.Contains('<', StringComparison.Ordinal))
            .Select(t => t.Name.Split('`')[0])
            .Distinct()
            .ToArray();
        Assert.Contains(nameof(ProjectionStoreSpec), transportTypes);
        Assert.Contains(nameof(TransportSecurity), transportTypes);
        var typeName = new Regex(@"\b(" + string.Join('|', transportTypes) + @")\b", RegexOptions.CultureInvariant);

        var offenders = new List<string>();
        foreach (var file in files)
        {
            var text = File.ReadAllText(file);
            if (text.Contains("Hyder.Log.Transport", StringComparison.Ordinal))
            {
                offenders.Add($"{Path.GetFileName(file)}: Hyder.Log.Transport");
            }

            foreach (Match m in typeName.Matches(text))
            {
                offenders.Add($"{Path.GetFileName(file)}: {m.Value}");
            }
        }

        Assert.True(offenders.Count == 0, "Layout references Transport: " + string.Join(", ", offenders));
    }
}
