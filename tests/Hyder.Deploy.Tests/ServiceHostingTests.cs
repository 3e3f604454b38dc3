using Hyder.Hosting;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Hosting.Systemd;
using Microsoft.Extensions.Logging.Abstractions;
using Xunit;

namespace Hyder.Deploy.Tests;

/// <summary>
/// What the hosts add to Microsoft.Extensions.Hosting.Systemd: the lifetime under any notify socket,
/// watchdog pings and the status line, against a recording notifier and a fake host lifetime.
/// </summary>
public sealed class ServiceHostingTests
{
    private static readonly TimeSpan s_patience = TimeSpan.FromSeconds(5);

    private static Func<string, string?> Environment(params (string Name, string Value)[] variables)
    {
        var map = variables.ToDictionary(v => v.Name, v => (string?)v.Value);
        return name => map.GetValueOrDefault(name);
    }

    [Fact]
    public void ANotifySocketBringsSystemdsLifetimeAndItsAbsenceTheConsoles()
    {
        static IHostLifetime Lifetime(Func<string, string?> environment)
        {
            var builder = Host.CreateApplicationBuilder(new HostApplicationBuilderSettings { DisableDefaults = true, Args = [] });
            builder.Services.AddServiceHosting("hyder-test", environment);
            using var host = builder.Build();
            Assert.Single(host.Services.GetServices<IHostedService>().OfType<SystemdWatchdog>());
            return host.Services.GetRequiredService<IHostLifetime>();
        }

        Assert.IsType<SystemdLifetime>(Lifetime(Environment(("NOTIFY_SOCKET", "/run/test/notify"))));
        Assert.IsNotType<SystemdLifetime>(Lifetime(Environment()));
    }

    [Fact]
    public void TheWatchdogPingsAtHalfTheTimeoutAndOnlyForItsOwnProcess()
    {
        Assert.Null(SystemdWatchdog.Interval(Environment(), 7));
        Assert.Null(SystemdWatchdog.Interval(Environment(("WATCHDOG_USEC", "0")), 7));
        Assert.Null(SystemdWatchdog.Interval(Environment(("WATCHDOG_USEC", "soon")), 7));
        Assert.Null(SystemdWatchdog.Interval(Environment(("WATCHDOG_USEC", "-5")), 7));
        Assert.Equal(TimeSpan.FromSeconds(15), SystemdWatchdog.Interval(Environment(("WATCHDOG_USEC", "30000000")), 7));
        Assert.Equal(TimeSpan.FromSeconds(15), SystemdWatchdog.Interval(Environment(("WATCHDOG_USEC", "30000000"), ("WATCHDOG_PID", "7")), 7));
        Assert.Null(SystemdWatchdog.Interval(Environment(("WATCHDOG_USEC", "30000000"), ("WATCHDOG_PID", "8")), 7));
    }

    [Fact]
    public async Task WithoutNotifySocketTheWatchdogSendsNothing()
    {
        var notifier = new RecordingNotifier(enabled: false);
        using var lifetime = new FakeLifetime();
        using var watchdog = new SystemdWatchdog(notifier, lifetime, new ServiceStatus(), NullLogger.Instance, Environment(("WATCHDOG_USEC", "1000")), 7);
        await watchdog.StartAsync(CancellationToken.None);
        lifetime.Start();
        await watchdog.StopAsync(CancellationToken.None);
        Assert.Empty(notifier.Sent);
    }

    [Fact]
    public async Task TheStatusLineGoesOutOnceTheHostHasStarted()
    {
        var notifier = new RecordingNotifier(enabled: true);
        using var lifetime = new FakeLifetime();
        var status = new ServiceStatus();
        using var watchdog = new SystemdWatchdog(notifier, lifetime, status, NullLogger.Instance, Environment(), 7);
        await watchdog.StartAsync(CancellationToken.None);

        // The host's services start after this one; the status is theirs, sent once all have started.
        status.Text = "Serving tests\non port 1";
        Assert.Empty(notifier.Sent);
        lifetime.Start();
        Assert.Equal(["STATUS=Serving tests on port 1"], notifier.Sent);
        await watchdog.StopAsync(CancellationToken.None);
    }

    [Fact]
    public async Task TheWatchdogPingsUntilItStops()
    {
        var notifier = new RecordingNotifier(enabled: true);
        using var lifetime = new FakeLifetime();
        using var watchdog = new SystemdWatchdog(notifier, lifetime, new ServiceStatus(), NullLogger.Instance, Environment(("WATCHDOG_USEC", "100000")), 7);
        await watchdog.StartAsync(CancellationToken.None);
        await notifier.WaitForAsync(3, s_patience);
        await watchdog.StopAsync(CancellationToken.None);

        // StopAsync waits for the ping loop to end: nothing may come after it.
        var after = notifier.Sent.Count;
        await Task.Delay(300);
        Assert.Equal(after, notifier.Sent.Count);
        Assert.All(notifier.Sent, m => Assert.Equal("WATCHDOG=1", m));
    }

    [Theory]
    [InlineData("127.0.0.1:9464", "127.0.0.1", 9464)]
    [InlineData("[::1]:80", "[::1]", 80)]
    [InlineData("metrics.internal:65535", "metrics.internal", 65535)]
    public void AMetricsAddressIsHostAndPort(string value, string host, int port) =>
        Assert.Equal((host, port), HostMetrics.ParseListen(value, "--metrics-listen"));

    [Theory]
    [InlineData("9464")]
    [InlineData(":9464")]
    [InlineData("127.0.0.1:0")]
    [InlineData("127.0.0.1:70000")]
    [InlineData("http://127.0.0.1")]
    [InlineData("http://127.0.0.1:9464/metrics")]
    public void AMetricsAddressThatIsNotHostAndPortIsRefusedNamingTheOption(string value)
    {
        var e = Assert.Throws<HostLoggingException>(() => HostMetrics.ParseListen(value, "--metrics-listen"));
        Assert.StartsWith($"--metrics-listen '{value}' is not HOST:PORT", e.Message, StringComparison.Ordinal);
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

    private sealed class RecordingNotifier(bool enabled) : ISystemdNotifier
    {
        private readonly SemaphoreSlim _arrived = new(0);
        private readonly List<string> _sent = [];

        public bool IsEnabled => enabled;

        public List<string> Sent
        {
            get
            {
                lock (_sent)
                {
                    return [.. _sent];
                }
            }
        }

        public void Notify(ServiceState state)
        {
            lock (_sent)
            {
                _sent.Add(state.ToString());
            }

            _arrived.Release();
        }

        public async Task WaitForAsync(int count, TimeSpan timeout)
        {
            for (var i = 0; i < count; i++)
            {
                Assert.True(await _arrived.WaitAsync(timeout), $"{i} of {count} messages in {timeout}");
            }
        }
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
