using System.Diagnostics;
using System.IO.Compression;
using System.Text.RegularExpressions;
using System.Xml.Linq;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Deploy.Tests;

/// <summary>
/// The client as a .NET user meets it: Hyder.Client, Hyder.Api and Hyder.Security packed into a local
/// folder feed with their metadata, a fresh console app restored from that feed, and the app
/// running concurrent conflicting transfers against a real hyder-server. Packs and restores take
/// minutes, so this is in the long run.
/// </summary>
[Trait("Category", "Stress")]
public sealed partial class PackageTests(ITestOutputHelper output)
{
    private static readonly string[] s_packages = ["Hyder.Security", "Hyder.Api", "Hyder.Client"];

    private const string App = """
        using System.Text;
        using Hyder.Client;

        await using var client = new HyderClient($"Endpoint={args[0]};MaxRetries=100");
        await client.ExecuteAsync(IsolationLevel.Serializable,
            [HyderOperation.Put("a"u8.ToArray(), "100"u8.ToArray()), HyderOperation.Put("b"u8.ToArray(), "0"u8.ToArray())]);
        static long Read(byte[]? value) => long.Parse(Encoding.UTF8.GetString(value!));
        await Task.WhenAll(Enumerable.Range(0, 20).Select(_ => client.ReadWriteAsync(async tx =>
        {
            var a = Read(await tx.GetAsync("a"u8.ToArray()));
            var b = Read(await tx.GetAsync("b"u8.ToArray()));
            await tx.PutAsync("a"u8.ToArray(), Encoding.UTF8.GetBytes((a - 1).ToString()));
            await tx.PutAsync("b"u8.ToArray(), Encoding.UTF8.GetBytes((b + 1).ToString()));
        })));
        var values = await client.ReadAsync(["a"u8.ToArray(), "b"u8.ToArray()]);
        Console.WriteLine($"a={Read(values[0])} b={Read(values[1])}");
        """;

    [Fact]
    public async Task APackedClientRestoresIntoAFreshAppThatRunsTransactionsAgainstARealServer()
    {
        using var root = new TempDirectory("hyder-package-test-");
        var feed = Path.Combine(root.Path, "feed");
        var repository = BuiltProject.RepositoryRoot();

        // A version of its own, so no package of an earlier run in the global packages folder stands in for these.
        var suffix = $"test.{DateTime.UtcNow:yyyyMMddHHmmss}.{Environment.ProcessId}";
        var version = $"1.0.0-{suffix}";
        try
        {
            foreach (var package in s_packages)
            {
                var (code, text) = await RunAsync(root.Path,
                    "pack", Path.Combine(repository, "src", package, package + ".csproj"), "-c", "Release", "-o", feed,
                    "--artifacts-path", Path.Combine(root.Path, "artifacts"), $"-p:VersionSuffix={suffix}",
                    "-p:RunAnalyzers=false", "--disable-build-servers", "-nodeReuse:false", "-nologo");
                Assert.True(code == 0, $"dotnet pack {package}: exit {code}\n{text}");
                Assert.DoesNotContain("warning", text, StringComparison.OrdinalIgnoreCase);
                Assert.True(File.Exists(Path.Combine(feed, $"{package}.{version}.snupkg")), $"no symbols package for {package}");

                var metadata = Nuspec(Path.Combine(feed, $"{package}.{version}.nupkg"));
                Assert.Equal(version, Element(metadata, "version"));
                Assert.Equal("MIT", Element(metadata, "license"));
                Assert.Equal("README.md", Element(metadata, "readme"));
                Assert.False(string.IsNullOrWhiteSpace(Element(metadata, "description")));
                Assert.Contains("hyder", Element(metadata, "tags"), StringComparison.Ordinal);
                Assert.Matches("^[0-9a-f]{40}$", metadata.Elements().Single(e => e.Name.LocalName == "repository").Attribute("commit")!.Value);
            }

            using (var client = ZipFile.OpenRead(Path.Combine(feed, $"Hyder.Client.{version}.nupkg")))
            {
                using var readme = new StreamReader(client.GetEntry("README.md")!.Open());
                Assert.Contains("## Quick start", await readme.ReadToEndAsync(), StringComparison.Ordinal);
            }

            // A fresh app outside the repository (none of its props apply), restoring from the feed.
            var app = Path.Combine(root.Path, "app");
            Directory.CreateDirectory(app);
            await File.WriteAllTextAsync(Path.Combine(app, "App.csproj"), $"""
                <Project Sdk="Microsoft.NET.Sdk">
                  <PropertyGroup>
                    <OutputType>Exe</OutputType>
                    <TargetFramework>net10.0</TargetFramework>
                    <ImplicitUsings>enable</ImplicitUsings>
                    <Nullable>enable</Nullable>
                  </PropertyGroup>
                  <ItemGroup>
                    <PackageReference Include="Hyder.Client" Version="{version}" />
                  </ItemGroup>
                </Project>
                """);
            await File.WriteAllTextAsync(Path.Combine(app, "nuget.config"), $"""
                <configuration>
                  <packageSources>
                    <add key="hyder-local" value="{feed}" />
                  </packageSources>
                </configuration>
                """);
            await File.WriteAllTextAsync(Path.Combine(app, "Program.cs"), App);
            var build = await RunAsync(app, "build", "-c", "Release", "--disable-build-servers", "-nodeReuse:false", "-nologo");
            Assert.True(build.ExitCode == 0, $"dotnet build of the fresh app: exit {build.ExitCode}\n{build.Output}");

            var server = Process.Start(new ProcessStartInfo(DeployFiles.Dotnet())
            {
                ArgumentList = { BuiltProject.Dll("Hyder.Server.Host", "hyder-server.dll"), "--embedded", "--listen", "http://127.0.0.1:0" },
                RedirectStandardOutput = true,
                RedirectStandardError = true,
                Environment = { ["DOTNET_EnableDiagnostics"] = "0" },
            })!;
            try
            {
                server.ErrorDataReceived += (_, _) => { };
                server.BeginErrorReadLine();
                string? line;
                Match ready;
                do
                {
                    line = await server.StandardOutput.ReadLineAsync().WaitAsync(TimeSpan.FromSeconds(60));
                    Assert.True(line is not null, "hyder-server exited before it was ready");
                    ready = ReadyLine().Match(line);
                }
                while (!ready.Success);

                var run = await RunAsync(app, Path.Combine(app, "bin", "Release", "net10.0", "App.dll"), ready.Groups[1].Value);
                output.WriteLine(run.Output);
                Assert.True(run.ExitCode == 0, run.Output);
                Assert.Contains("a=80 b=20", run.Output, StringComparison.Ordinal);
            }
            finally
            {
                server.Kill(entireProcessTree: true);
                await server.WaitForExitAsync();
                server.Dispose();
            }
        }
        finally
        {
            // The global packages folder keeps what the app restored; this run's versions go.
            var global = Environment.GetEnvironmentVariable("NUGET_PACKAGES") ?? Path.Combine(Environment.GetFolderPath(Environment.SpecialFolder.UserProfile), ".nuget", "packages");
            foreach (var package in s_packages)
            {
                var restored = Path.Combine(global, package.ToLowerInvariant(), version);
                if (Directory.Exists(restored))
                {
                    Directory.Delete(restored, recursive: true);
                }
            }
        }
    }

    private static XElement Nuspec(string nupkg)
    {
        using var zip = ZipFile.OpenRead(nupkg);
        using var stream = zip.Entries.Single(e => e.FullName.EndsWith(".nuspec", StringComparison.Ordinal)).Open();
        return XDocument.Load(stream).Root!.Elements().Single(e => e.Name.LocalName == "metadata");
    }

    private static string Element(XElement metadata, string name) =>
        metadata.Elements().SingleOrDefault(e => e.Name.LocalName == name)?.Value ?? throw new Xunit.Sdk.XunitException($"the nuspec has no <{name}>");

    /// <summary>Runs dotnet in <paramref name="directory"/>, for up to 10 minutes (a pack or a first restore under load).</summary>
    private static Task<(int ExitCode, string Output)> RunAsync(string directory, params string[] args) =>
        DeployFiles.RunAsync(DeployFiles.Dotnet(), args, directory, TimeSpan.FromMinutes(10));

    [GeneratedRegex(@"^hyder-server \S+ ready on (\S+)$")]
    private static partial Regex ReadyLine();
}
