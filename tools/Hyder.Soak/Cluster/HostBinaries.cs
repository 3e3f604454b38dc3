namespace Hyder.Soak.Cluster;

/// <summary>The built hosts a local cluster runs: hyder-log and hyder-server.</summary>
/// <param name="LogHost">Path of Hyder.Log.Host.dll.</param>
/// <param name="Server">Path of hyder-server.dll.</param>
public sealed record HostBinaries(string LogHost, string Server)
{
    /// <summary>
    /// The hosts built in this repository in the configuration this assembly was built in
    /// (src/*/bin/CONFIGURATION/net10.0, where <c>dotnet build</c> puts them; this project
    /// references both, so they are built with it). Throws naming the missing file.
    /// </summary>
    public static HostBinaries FromRepository()
    {
        var here = new DirectoryInfo(Path.TrimEndingDirectorySeparator(AppContext.BaseDirectory));
        var configuration = here.Parent!.Name;
        var root = here;
        while (!File.Exists(Path.Combine(root.FullName, "Hyder.sln")))
        {
            root = root.Parent ?? throw new InvalidOperationException($"Hyder.sln not found above {AppContext.BaseDirectory}; pass the hosts' paths explicitly.");
        }

        var hosts = new HostBinaries(
            Path.Combine(root.FullName, "src", "Hyder.Log.Host", "bin", configuration, "net10.0", "Hyder.Log.Host.dll"),
            Path.Combine(root.FullName, "src", "Hyder.Server.Host", "bin", configuration, "net10.0", "hyder-server.dll"));
        foreach (var file in (string[])[hosts.LogHost, hosts.Server])
        {
            if (!File.Exists(file))
            {
                throw new FileNotFoundException($"{file} is missing: build it (dotnet build -c {configuration} tools/Hyder.Soak).", file);
            }
        }

        return hosts;
    }
}
