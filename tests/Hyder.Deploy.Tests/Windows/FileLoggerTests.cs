using Hyder.Hosting;
using Hyder.Testing;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Logging;
using Xunit;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>The file logger: one line per event, appended and on disk at once, newlines escaped, roll-over, clear errors.</summary>
public sealed class FileLoggerTests
{
    private static readonly Action<ILogger, int, Exception?> s_first = LoggerMessage.Define<int>(LogLevel.Information, default, "first {Value}");
    private static readonly Action<ILogger, int, string, Exception?> s_numbered = LoggerMessage.Define<int, string>(LogLevel.Information, default, "event {Number} {Padding}");

    [Fact]
    public void ALineHoldsTheUtcTimeLevelCategoryEventIdAndMessageWithNewlinesEscaped()
    {
        var time = new DateTimeOffset(2026, 11, 21, 20, 5, 9, 42, TimeSpan.FromHours(2));
        var line = FileLoggerProvider.FormatLine(time, LogLevel.Warning, "Hyder.Log", new EventId(7), "two\r\nlines", null);
        Assert.Equal("2026-11-21T18:05:09.042Z warn Hyder.Log[7] two\\nlines", line);

        var withException = FileLoggerProvider.FormatLine(time, LogLevel.Error, "C", default, "failed", new InvalidOperationException("bad\nthing"));
        Assert.StartsWith("2026-11-21T18:05:09.042Z fail C[0] failed | System.InvalidOperationException: bad\\nthing", withException, StringComparison.Ordinal);
        Assert.DoesNotContain('\n', withException);
    }

    [Fact]
    public void EveryEventIsOnDiskWhenTheCallReturnsAndASecondProviderAppends()
    {
        using var directory = new TempDirectory("hyder-filelog-test-");
        var path = Path.Combine(directory.Path, "nested", "host.log");
        using (var provider = new FileLoggerProvider(path))
        {
            var logger = provider.CreateLogger("Hyder.Test");
            s_first(logger, 1, null);
            // Read while the provider still holds the file open: the line is already there.
            var lines = ReadShared(path);
            Assert.Single(lines);
            Assert.EndsWith(" info Hyder.Test[0] first 1", lines[0], StringComparison.Ordinal);
            logger.LogError(new EventId(3), "second");
        }

        using (var provider = new FileLoggerProvider(path))
        {
            provider.CreateLogger("Other").LogWarning("third");
        }

        Assert.Equal(["first 1", "second", "third"], File.ReadAllLines(path).Select(l => l[(l.IndexOf("] ", StringComparison.Ordinal) + 2)..]));
    }

    [Fact]
    public void AFileOverItsLimitRollsOverToNameDotOneAndANewFileBegins()
    {
        using var directory = new TempDirectory("hyder-filelog-test-");
        var path = Path.Combine(directory.Path, "host.log");
        using (var provider = new FileLoggerProvider(path, sizeLimit: 1024))
        {
            var logger = provider.CreateLogger("C");
            for (var i = 0; i < 40; i++)
            {
                s_numbered(logger, i, new string('x', 40), null);
            }
        }

        Assert.True(new FileInfo(path).Length <= 1024);
        Assert.True(new FileInfo(path + ".1").Length <= 1024);
        var kept = File.ReadAllLines(path + ".1").Concat(File.ReadAllLines(path)).ToList();
        // The newest events survive in order; the oldest were rolled away.
        Assert.Contains("event 39 ", kept[^1], StringComparison.Ordinal);
        var numbers = kept.Select(l => int.Parse(l.Split(' ')[4], System.Globalization.CultureInfo.InvariantCulture)).ToList();
        Assert.Equal(Enumerable.Range(numbers[0], numbers.Count), numbers);
        Assert.Equal(2, Directory.GetFiles(directory.Path).Length);
    }

    [Fact]
    public void AFileThatCannotBeOpenedIsAClearError()
    {
        using var directory = new TempDirectory("hyder-filelog-test-");
        var blocker = Path.Combine(directory.Path, "not-a-directory");
        File.WriteAllText(blocker, "");
        var e = Assert.Throws<HostLoggingException>(() => new FileLoggerProvider(Path.Combine(blocker, "host.log")));
        Assert.StartsWith($"--log-file {Path.Combine(blocker, "host.log")}: cannot be opened for writing", e.Message, StringComparison.Ordinal);
    }

    [Fact]
    public void TheHostsLoggingWritesTheFileAndItsFiltersApply()
    {
        using var directory = new TempDirectory("hyder-filelog-test-");
        var path = Path.Combine(directory.Path, "host.log");
        var options = HostLogOptions.Read(false, "file", null, path, null, "hyder-test", _ => null, isWindows: false);
        var services = new ServiceCollection();
        services.AddLogging(logging =>
        {
            logging.SetMinimumLevel(LogLevel.Information);
            logging.AddHostLogging(options);
        });
        using (var provider = services.BuildServiceProvider())
        {
            var logger = provider.GetRequiredService<ILogger<FileLoggerTests>>();
            logger.LogDebug("filtered out");
            logger.LogInformation("kept");
        }

        var line = Assert.Single(File.ReadAllLines(path));
        Assert.EndsWith($" info {typeof(FileLoggerTests).FullName}[0] kept", line, StringComparison.Ordinal);
    }

    private static List<string> ReadShared(string path)
    {
        using var stream = new FileStream(path, FileMode.Open, FileAccess.Read, FileShare.ReadWrite | FileShare.Delete);
        using var reader = new StreamReader(stream);
        return [.. reader.ReadToEnd().Split('\n', StringSplitOptions.RemoveEmptyEntries)];
    }
}
