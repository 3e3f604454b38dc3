namespace Hyder.Testing;

/// <summary>Where a project of this repository was built, for tests that run it as a child process.</summary>
internal static class BuiltProject
{
    /// <summary>
    /// The path of <paramref name="assembly"/> built from <c>src/<paramref name="project"/></c> in
    /// the configuration the tests run in (the test project references it, unreferenced, so it
    /// is built first).
    /// </summary>
    public static string Dll(string project, string assembly)
    {
        var here = Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory);
        var configuration = new DirectoryInfo(here).Parent!.Name;
        var root = new DirectoryInfo(here);
        while (!File.Exists(Path.Combine(root.FullName, "Hyder.sln")))
        {
            root = root.Parent ?? throw new InvalidOperationException("Hyder.sln not found above " + here);
        }

        return Path.Combine(root.FullName, "src", project, "bin", configuration, "net10.0", assembly);
    }
}
