using System.Globalization;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Hosting.Systemd;
using Microsoft.Extensions.Logging;

namespace Hyder.Hosting;

/// <summary>
/// What Microsoft.Extensions.Hosting.Systemd's <see cref="SystemdLifetime"/> does not send (it sends
/// <c>READY=1</c> once every hosted service has started and <c>STOPPING=1</c> when a stop begins):
/// <c>WATCHDOG=1</c> every half <c>WATCHDOG_USEC</c> while the process runs, and the host's
/// one-line <see cref="ServiceStatus"/> as <c>STATUS=</c> once it has started (<c>systemctl
/// status</c> shows it). Registered before the host's own services, it starts first and stops
/// last, so the watchdog keeps pinging through a long shutdown. Without <c>NOTIFY_SOCKET</c> it
/// does nothing.
/// </summary>
public sealed partial class SystemdWatchdog : IHostedService, IDisposable
{
    private readonly ISystemdNotifier _notifier;
    private readonly IHostApplicationLifetime _lifetime;
    private readonly ServiceStatus _status;
    private readonly ILogger _logger;
    private readonly TimeSpan? _interval;
    private readonly CancellationTokenSource _stop = new();
    private CancellationTokenRegistration _started;
    private Task _pings = Task.CompletedTask;

    /// <summary>A watchdog for the process's own environment.</summary>
    public SystemdWatchdog(ISystemdNotifier notifier, IHostApplicationLifetime lifetime, ServiceStatus status, ILogger<SystemdWatchdog> logger)
        : this(notifier, lifetime, status, logger, Environment.GetEnvironmentVariable, Environment.ProcessId)
    {
    }

    /// <summary>A watchdog for the environment <paramref name="environment"/> reads, in the process <paramref name="processId"/>.</summary>
    internal SystemdWatchdog(ISystemdNotifier notifier, IHostApplicationLifetime lifetime, ServiceStatus status, ILogger logger, Func<string, string?> environment, int processId)
    {
        _notifier = notifier;
        _lifetime = lifetime;
        _status = status;
        _logger = logger;
        _interval = Interval(environment, processId);
    }

    /// <summary>
    /// Half of <c>WATCHDOG_USEC</c> (systemd's advice), or null without a positive value or when
    /// <c>WATCHDOG_PID</c> names another process.
    /// </summary>
    internal static TimeSpan? Interval(Func<string, string?> environment, int processId)
    {
        if (!long.TryParse(environment("WATCHDOG_USEC"), NumberStyles.None, CultureInfo.InvariantCulture, out var microseconds) || microseconds <= 0)
        {
            return null;
        }

        if (environment("WATCHDOG_PID") is { Length: > 0 } pid && pid != processId.ToString(CultureInfo.InvariantCulture))
        {
            return null;
        }

        return TimeSpan.FromMicroseconds(microseconds / 2.0);
    }

    /// <inheritdoc/>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (!_notifier.IsEnabled)
        {
            return Task.CompletedTask;
        }

        _started = _lifetime.ApplicationStarted.Register(() => _notifier.Notify(new ServiceState("STATUS=" + OneLine(_status.Text ?? "Serving"))));
        if (_interval is { } interval)
        {
            LogWatchdog(interval.TotalMilliseconds);
            _pings = PingAsync(interval, _stop.Token);
        }

        return Task.CompletedTask;
    }

    /// <inheritdoc/>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await _stop.CancelAsync().ConfigureAwait(false);
        await _pings.ConfigureAwait(false);
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        _started.Dispose();
        _stop.Dispose();
    }

    private static string OneLine(string text) => text.ReplaceLineEndings(" ");

    private async Task PingAsync(TimeSpan interval, CancellationToken cancellationToken)
    {
        // The first ping goes at once: a slow start must not use up the first interval.
        using var timer = new PeriodicTimer(interval);
        var watchdog = new ServiceState("WATCHDOG=1");
        try
        {
            do
            {
                _notifier.Notify(watchdog);
            }
            while (await timer.WaitForNextTickAsync(cancellationToken).ConfigureAwait(false));
        }
        catch (OperationCanceledException)
        {
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "systemd watchdog on: WATCHDOG=1 every {Milliseconds} ms")]
    private partial void LogWatchdog(double milliseconds);
}
