using System.Text;
using Hyder.Hosting;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging.Abstractions;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>The notify client and service on their own: addresses, message format, no-op without a socket, readiness, stopping and watchdog.</summary>
public sealed class NotifierTests
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(5);

    private static Func<string, string?> Environment(params (string Name, string Value)[] variables)
    {
        var map = variables.ToDictionary(v => v.Name, v => (string?)v.Value);
        return name => map.GetValueOrDefault(name);
    }

    [Theory]
    [InlineData(null)]
    [InlineData("")]
    [InlineData("@")]
    [InlineData("relative/path")]
    [InlineData("vsock:2:1234")]
    public void WithoutAUsableNotifySocketThereIsNoNotifier(string? value)
    {
        Assert.Null(SystemdNotifier.ParseAddress(value));
        Assert.Null(SystemdNotifier.FromEnvironment(Environment(value is null ? [] : [("NOTIFY_SOCKET", value)])));
    }

    [Fact]
    public void APathOrAnAtSignAndANameIsAnAddress()
    {
        Assert.NotNull(SystemdNotifier.ParseAddress("/run/systemd/notify"));
        Assert.NotNull(SystemdNotifier.ParseAddress("@hyder/notify"));
    }

    [Fact]
    public void AMessageIsNewlineSeparatedAssignmentsWithNoTrailingNewline()
    {
        var bytes = SystemdNotifier.Format(("READY", "1"), ("STATUS", "serving on\nport 1"), ("MAINPID", "42"));
        Assert.Equal("READY=1\nSTATUS=serving on port 1\nMAINPID=42", Encoding.UTF8.GetString(bytes));
        Assert.Throws<ArgumentException>(() => SystemdNotifier.Format(("A=B", "1")));
        Assert.Throws<ArgumentException>(() => SystemdNotifier.Format(("", "1")));
    }

    [Theory]
    [InlineData(false)]
    [InlineData(true)]
    public async Task TheNotifierReachesAPathOrAnAbstractSocket(bool isAbstract)
    {
        using var socket = new NotifySocket(isAbstract);
        using var notifier = SystemdNotifier.FromEnvironment(Environment(("NOTIFY_SOCKET", socket.Address)))!;
        Assert.True(notifier.TrySend(("READY", "1"), ("STATUS", "test")));
        Assert.Equal("READY=1\nSTATUS=test", await socket.WaitForAsync("READY=1", s_patience));
    }

    [Fact]
    public void ASocketNobodyListensOnIsReportedNotThrown()
    {
        var path = Path.Combine(Path.GetTempPath(), "hyder-no-listener-" + Guid.NewGuid().ToString("N")[..8]);
        using var notifier = SystemdNotifier.FromEnvironment(Environment(("NOTIFY_SOCKET", path)))!;
        Assert.False(notifier.TrySend(("READY", "1")));
    }

    [Fact]
    public void TheWatchdogPingsAtHalfTheTimeoutAndOnlyForItsOwnProcess()
    {
        Assert.Null(SystemdNotifier.WatchdogInterval(Environment(), 7));
        Assert.Null(SystemdNotifier.WatchdogInterval(Environment(("WATCHDOG_USEC", "0")), 7));
        Assert.Null(SystemdNotifier.WatchdogInterval(Environment(("WATCHDOG_USEC", "soon")), 7));
        Assert.Equal(TimeSpan.FromSeconds(15), SystemdNotifier.WatchdogInterval(Environment(("WATCHDOG_USEC", "30000000")), 7));
        Assert.Equal(TimeSpan.FromSeconds(15), SystemdNotifier.WatchdogInterval(Environment(("WATCHDOG_USEC", "30000000"), ("WATCHDOG_PID", "7")), 7));
        Assert.Null(SystemdNotifier.WatchdogInterval(Environment(("WATCHDOG_USEC", "30000000"), ("WATCHDOG_PID", "8")), 7));
    }

    [Fact]
    public async Task WithoutNotifySocketTheServiceDoesNothing()
    {
        using var lifetime = new FakeLifetime();
        using var service = new SystemdNotifyService(lifetime, new ServiceStatus(), NullLogger.Instance, Environment(("WATCHDOG_USEC", "1000")));
        await service.StartAsync(CancellationToken.None);
        lifetime.Start();
        lifetime.StopApplication();
        await service.StopAsync(CancellationToken.None);
    }

    [Fact]
    public async Task TheServiceSendsReadyWhenTheHostHasStartedAndStoppingWhenItStops()
    {
        using var socket = new NotifySocket();
        using var lifetime = new FakeLifetime();
        var status = new ServiceStatus();
        using var service = new SystemdNotifyService(lifetime, status, NullLogger.Instance, Environment(("NOTIFY_SOCKET", socket.Address)));
        await service.StartAsync(CancellationToken.None);

        // The host's services start after this one; readiness waits for all of them.
        status.Text = "Serving tests";
        Assert.Empty(socket.Received);
        lifetime.Start();
        var ready = NotifySocket.Assignments(await socket.WaitForAsync("READY=1", s_patience));
        Assert.Contains("STATUS=Serving tests", ready);
        Assert.Contains($"MAINPID={System.Environment.ProcessId}", ready);

        lifetime.StopApplication();
        Assert.Contains("STOPPING=1", NotifySocket.Assignments(await socket.WaitForAsync("STOPPING=1", s_patience)));
        await service.StopAsync(CancellationToken.None);
    }

    [Fact]
    public async Task TheServicePingsTheWatchdogUntilItStops()
    {
        using var socket = new NotifySocket();
        using var lifetime = new FakeLifetime();
        using var service = new SystemdNotifyService(
            lifetime,
            new ServiceStatus(),
            NullLogger.Instance,
            Environment(("NOTIFY_SOCKET", socket.Address), ("WATCHDOG_USEC", "100000"), ("WATCHDOG_PID", System.Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture))));
        await service.StartAsync(CancellationToken.None);
        for (var i = 0; i < 3; i++)
        {
            Assert.Equal("WATCHDOG=1", await socket.WaitForAsync("WATCHDOG=1", s_patience));
        }

        await service.StopAsync(CancellationToken.None);

        // A ping sent just before the stop may still be on its way to the socket's reader: let it
        // arrive, then no more may come for several watchdog intervals (50 ms each).
        await Task.Delay(100);
        var after = socket.Received.Count;
        await Task.Delay(300);
        Assert.Equal(after, socket.Received.Count);
    }

    [Theory]
    [InlineData(null, false, ConsoleLogFormat.Simple)]
    [InlineData(null, true, ConsoleLogFormat.Systemd)]
    [InlineData("simple", true, ConsoleLogFormat.Simple)]
    [InlineData("Systemd", false, ConsoleLogFormat.Systemd)]
    public void TheLogFormatFollowsTheOptionOrElseWhetherSystemdStartedTheProcess(string? option, bool underSystemd, ConsoleLogFormat expected)
    {
        var environment = underSystemd ? Environment(("INVOCATION_ID", "0123456789abcdef")) : Environment();
        Assert.True(ServiceHosting.TryParseLogFormat(option, environment, out var format));
        Assert.Equal(expected, format);
        Assert.False(ServiceHosting.TryParseLogFormat("json", environment, out _));
    }

    private sealed class FakeLifetime : IHostApplicationLifetime, IDisposable
    {
        private readonly CancellationTokenSource _started = new();
        private readonly CancellationTokenSource _stopping = new();
        private readonly CancellationTokenSource _stopped = new();

        public CancellationToken ApplicationStarted => _started.Token;

        public CancellationToken ApplicationStopping => _stopping.Token;

        public CancellationToken ApplicationStopped => _stopped.Token;

        public void Start() => _started.Cancel();

        public void StopApplication() => _stopping.Cancel();

        public void Dispose()
        {
            _started.Dispose();
            _stopping.Dispose();
            _stopped.Dispose();
        }
    }
}
