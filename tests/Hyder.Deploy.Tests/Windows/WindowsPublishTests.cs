using System.Diagnostics;
using Hyder.Testing;
using Xunit;
using Xunit.Abstractions;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>
/// CI's Windows build: both hosts published for win-x64 (framework-dependent, the Windows app host
/// pack restores from the mirror) into a temporary directory, once for the class. The app hosts
/// install.ps1 names must be there and be PE files, and the event log's message file that install.ps1 registers.
/// Two full publishes take minutes and change only with the projects' references, so this runs
/// in the long run (<c>Category=Stress</c>), not the default one.
/// </summary>
[Trait("Category", "Stress")]
public sealed class WindowsPublishTests(WindowsPublishTests.Published published, ITestOutputHelper output) : IClassFixture<WindowsPublishTests.Published>
{
    [Fact]
    public void TheWinX64PublishHasEveryAppHostInstallNamesAsAPeFile()
    {
        output.WriteLine(published.Log);
        foreach (var (folder, exe) in WindowsDeployFiles.Programs())
        {
            var path = Path.Combine(published.Directory, folder, exe);
            Assert.True(File.Exists(path), $"{folder}/{exe} is not in the publish: {string.Join(", ", System.IO.Directory.GetFiles(Path.Combine(published.Directory, folder), "*.exe").Select(Path.GetFileName))}");
            Assert.Equal("MZ"u8.ToArray(), Header(path, 0, 2));

            // The PE signature at the offset the DOS header names, and an x64 machine type.
            var peOffset = BitConverter.ToInt32(Header(path, 0x3C, 4));
            Assert.Equal("PE\0\0"u8.ToArray(), Header(path, peOffset, 4));
            Assert.Equal(0x8664, BitConverter.ToUInt16(Header(path, peOffset + 4, 2)));

        }

        // hyder-log carries EventLog and its message file; hyder-server has them from the ASP.NET Core
        // shared framework, so install.ps1 registers the log folder's message file for every source.
        Assert.Contains("$EventMessageFile = Join-Path (Join-Path $InstallDir 'log') 'System.Diagnostics.EventLog.Messages.dll'", WindowsDeployFiles.Read("install.ps1"), StringComparison.Ordinal);
        Assert.True(File.Exists(Path.Combine(published.Directory, "log", "System.Diagnostics.EventLog.Messages.dll")), "log: no event message file");
        Assert.True(File.Exists(Path.Combine(published.Directory, "log", "Microsoft.Extensions.Logging.EventLog.dll")), "log: no event log provider");
    }

    private static byte[] Header(string path, long offset, int count)
    {
        using var file = File.OpenRead(path);
        file.Position = offset;
        var bytes = new byte[count];
        file.ReadExactly(bytes);
        return bytes;
    }

    /// <summary>The two publishes, sharing one artifacts directory so the second reuses the libraries the first built.</summary>
    public sealed class Published : IDisposable
    {
        private static readonly TimeSpan s_limit = TimeSpan.FromMinutes(8);
        private readonly TempDirectory _root = new("hyder-winpublish-test-");

        public Published()
        {
            var repository = BuiltProject.RepositoryRoot();
            var log = new System.Text.StringBuilder();
            foreach (var (project, folder) in new[] { ("Hyder.Server.Host", "server"), ("Hyder.Log.Host", "log") })
            {
                var watch = Stopwatch.StartNew();
                var (code, text) = Run(
                    DeployFiles.Dotnet(),
                    [
                        "publish", Path.Combine(repository, "src", project, project + ".csproj"),
                        "-c", "Release", "-r", "win-x64", "--self-contained", "false",
                        // Its own obj and bin: the checkout's builds, which other tests run, stay untouched.
                        "--artifacts-path", Path.Combine(_root.Path, "artifacts"),
                        "-o", Path.Combine(Directory, folder),
                        // The checkout's own build ran the analyzers and wrote the docs; here only compiling counts.
                        "-p:RunAnalyzers=false", "-p:GenerateDocumentationFile=false",
                        "--disable-build-servers", "-nodeReuse:false", "-v", "quiet", "-nologo",
                    ]);
                log.AppendLine($"dotnet publish {project} -r win-x64: exit {code} in {watch.Elapsed.TotalSeconds:F1} s");
                if (code != 0)
                {
                    _root.Dispose();
                    throw new InvalidOperationException($"dotnet publish {project} -r win-x64 failed (exit {code}); does the mirror serve Microsoft.NETCore.App.Host.win-x64?\n{text}");
                }
            }

            Log = log.ToString();
        }

        public string Directory => Path.Combine(_root.Path, "out");

        /// <summary>What each publish took.</summary>
        public string Log { get; }

        public void Dispose() => _root.Dispose();

        private static (int Code, string Output) Run(string program, string[] args)
        {
            var info = new ProcessStartInfo(program) { RedirectStandardOutput = true, RedirectStandardError = true, UseShellExecute = false };
            foreach (var arg in args)
            {
                info.ArgumentList.Add(arg);
            }

            // The test host's MSBuild variables would point the child at the wrong SDK pieces.
            foreach (var name in info.Environment.Keys.Where(k => k.StartsWith("MSBuild", StringComparison.OrdinalIgnoreCase) || k == "MSBUILD_EXE_PATH").ToList())
            {
                info.Environment.Remove(name);
            }

            using var process = Process.Start(info)!;
            var stdout = process.StandardOutput.ReadToEndAsync();
            var stderr = process.StandardError.ReadToEndAsync();
            if (!process.WaitForExit(s_limit))
            {
                process.Kill(entireProcessTree: true);
                throw new TimeoutException($"{program} {string.Join(' ', args)} ran past {s_limit}.");
            }

            return (process.ExitCode, stdout.Result + stderr.Result);
        }
    }
}
