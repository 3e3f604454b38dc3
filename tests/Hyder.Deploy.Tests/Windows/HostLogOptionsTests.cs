using Hyder.Hosting;
using Hyder.Testing;
using Xunit;

namespace Hyder.Deploy.Tests.Windows;

/// <summary>The service and log options both hosts share: defaults, and every refusal a sentence.</summary>
public sealed class HostLogOptionsTests
{
    private static HostLogOptions Read(bool service = false, string? target = null, string? file = null, string? source = null, bool isWindows = false) =>
        HostLogOptions.Read(service, target, null, file, source, "hyder-test", _ => null, isWindows);

    private static string Refusal(bool service = false, string? target = null, string? file = null, string? source = null, bool isWindows = false) =>
        Assert.Throws<HostLoggingException>(() => Read(service, target, file, source, isWindows)).Message;

    [Fact]
    public void TheDefaultIsTheConsoleAndAsAWindowsServiceTheEventLogUnderTheHostsName()
    {
        var console = Read();
        Assert.Equal((LogTarget.Console, ConsoleLogFormat.Simple, false, "hyder-test"), (console.Target, console.Format, console.Service, console.EventSource));

        var service = Read(service: true, isWindows: true);
        Assert.Equal((LogTarget.EventLog, true, "hyder-test"), (service.Target, service.Service, service.EventSource));
        Assert.Equal("hyder-log-unit-1", Read(service: true, source: "hyder-log-unit-1", isWindows: true).EventSource);
        Assert.Equal(LogTarget.Console, Read(service: true, target: "Console", isWindows: true).Target);
    }

    [Fact]
    public void TheEventLogAndServiceModeAreRefusedOffWindowsWithAReason()
    {
        Assert.Equal("--log-target eventlog: the Windows event log exists only on Windows; use console or file.", Refusal(target: "eventlog"));
        Assert.Contains("--service runs the host under the Windows Service Control Manager, which exists only on Windows", Refusal(service: true), StringComparison.Ordinal);
        Assert.Equal(LogTarget.EventLog, Read(target: "eventlog", isWindows: true).Target);
    }

    [Fact]
    public void AFileTargetNeedsAFileAndAFileNeedsTheFileTarget()
    {
        Assert.Equal("--log-target file needs --log-file with the log file's path.", Refusal(target: "file"));
        Assert.Equal("--log-file is used only with --log-target file (the target is console).", Refusal(file: "x.log"));
        Assert.Equal("--log-target 'syslog' is not console, file or eventlog.", Refusal(target: "syslog"));
        Assert.Equal(Path.GetFullPath("x.log"), Read(target: "file", file: "x.log").File);

        using var directory = new TempDirectory("hyder-filelog-test-");
        Assert.Contains("is a directory", Refusal(target: "file", file: directory.Path), StringComparison.Ordinal);
    }

    [Theory]
    [InlineData("a\\b")]
    [InlineData("tab\there")]
    public void AnEventSourceMustBeAName(string source) =>
        Assert.Contains("is not a service or event source name", Refusal(source: source), StringComparison.Ordinal);

    [Fact]
    public void MessagesNameTheOptionAsTheHostDescribesIt()
    {
        var e = Assert.Throws<HostLoggingException>(() =>
            HostLogOptions.Read(false, "nope", null, null, null, "hyder-server", _ => null, false, o => $"{o} [Logging:Target]"));
        Assert.Equal("--log-target [Logging:Target] 'nope' is not console, file or eventlog.", e.Message);
    }
}
