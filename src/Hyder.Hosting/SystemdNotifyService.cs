using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;

namespace Hyder.Hosting;

/// <summary>
/// Tells systemd where the host is: <c>READY=1</c> once every hosted service has started (the
/// host's <see cref="IHostApplicationLifetime.ApplicationStarted"/>, so after the server listens),
/// <c>STOPPING=1</c> as soon as a stop begins (SIGTERM), and <c>WATCHDOG=1</c> every half
/// <c>WATCHDOG_USEC</c> while the process runs. Registered before the host's own services, it
/// starts first and stops last, so the watchdog keeps pinging through a long shutdown.
/// Without <c>NOTIFY_SOCKET</c> it does nothing.
/// </summary>
public sealed partial class SystemdNotifyService : IHostedService, IDisposable
{
    private readonly IHostApplicationLifetime _lifetime;
    private readonly ServiceStatus _status;
    private readonly ILogger _logger;
    private readonly Func<string, string?> _environment;
    private readonly SystemdNotifier? _notifier;
    private readonly CancellationTokenSource _stopWatchdog = new();
    private readonly List<CancellationTokenRegistration> _registrations = [];
    private Task _watchdog = Task.CompletedTask;

    /// <summary>A service for the process's own environment.</summary>
    public SystemdNotifyService(IHostApplicationLifetime lifetime, ServiceStatus status, ILogger<SystemdNotifyService> logger)
        : this(lifetime, status, logger, Environment.GetEnvironmentVariable)
    {
    }

    /// <summary>A service for the environment <paramref name="environment"/> reads.</summary>
    internal SystemdNotifyService(IHostApplicationLifetime lifetime, ServiceStatus status, ILogger logger, Func<string, string?> environment)
    {
        _lifetime = lifetime;
        _status = status;
        _logger = logger;
        _environment = environment;
        _notifier = SystemdNotifier.FromEnvironment(environment);
    }

    /// <inheritdoc/>
    public Task StartAsync(CancellationToken cancellationToken)
    {
        if (_notifier is null)
        {
            return Task.CompletedTask;
        }

        _registrations.Add(_lifetime.ApplicationStarted.Register(OnStarted));
        _registrations.Add(_lifetime.ApplicationStopping.Register(OnStopping));
        if (SystemdNotifier.WatchdogInterval(_environment, Environment.ProcessId) is { } interval)
        {
            LogWatchdog(interval.TotalMilliseconds);
            _watchdog = PingAsync(_notifier, interval, _stopWatchdog.Token);
        }

        return Task.CompletedTask;
    }

    /// <inheritdoc/>
    public async Task StopAsync(CancellationToken cancellationToken)
    {
        await _stopWatchdog.CancelAsync().ConfigureAwait(false);
        await _watchdog.ConfigureAwait(false);
    }

    /// <inheritdoc/>
    public void Dispose()
    {
        foreach (var registration in _registrations)
        {
            registration.Dispose();
        }

        _stopWatchdog.Dispose();
        _notifier?.Dispose();
    }

    private void OnStarted()
    {
        var status = _status.Text ?? "Serving";
        if (!_notifier!.TrySend(("READY", "1"), ("STATUS", status), ("MAINPID", Environment.ProcessId.ToString(System.Globalization.CultureInfo.InvariantCulture))))
        {
            LogNotSent("READY=1", _notifier.Address);
        }
    }

    private void OnStopping()
    {
        if (!_notifier!.TrySend(("STOPPING", "1"), ("STATUS", "Stopping")))
        {
            LogNotSent("STOPPING=1", _notifier.Address);
        }
    }

    private static async Task PingAsync(SystemdNotifier notifier, TimeSpan interval, CancellationToken cancellationToken)
    {
        // The first ping goes at once: a slow start must not use up the first interval.
        using var timer = new PeriodicTimer(interval);
        try
        {
            do
            {
                notifier.TrySend(("WATCHDOG", "1"));
            }
            while (await timer.WaitForNextTickAsync(cancellationToken).ConfigureAwait(false));
        }
        catch (OperationCanceledException)
        {
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "systemd watchdog on: WATCHDOG=1 every {Milliseconds} ms")]
    private partial void LogWatchdog(double milliseconds);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Could not send {Message} to NOTIFY_SOCKET {Address}")]
    private partial void LogNotSent(string message, string address);
}
