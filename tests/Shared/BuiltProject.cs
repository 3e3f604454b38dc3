namespace Hyder.Testing;

/// <summary>Where this repository and its built projects are, for tests that run a project as a child process or read its files.</summary>
internal static class BuiltProject
{
    /// <summary>
    /// The path of <paramref name="assembly"/> built from <c>src/<paramref name="project"/></c> in
    /// the configuration the tests run in (the test project references it, unreferenced, so it
    /// is built first).
    /// </summary>
    public static string Dll(string project, string assembly)
    {
        var configuration = new DirectoryInfo(Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory)).Parent!.Name;
        return Path.Combine(RepositoryRoot(), "src", project, "bin", configuration, "net10.0", assembly);
    }

    /// <summary>The repository's root: the first directory above the test's binaries that holds Hyder.sln.</summary>
    public static string RepositoryRoot()
    {
        var here = Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory);
        var root = new DirectoryInfo(here);
        while (!File.Exists(Path.Combine(root.FullName, "Hyder.sln")))
        {
            root = root.Parent ?? throw new InvalidOperationException("Hyder.sln not found above " + here);
        }

        return root.FullName;
    }
}
