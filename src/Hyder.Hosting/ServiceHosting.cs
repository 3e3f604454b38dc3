using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.DependencyInjection.Extensions;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Hosting.Systemd;
using Microsoft.Extensions.Logging;

namespace Hyder.Hosting;

/// <summary>How a host prints its log on the console.</summary>
public enum ConsoleLogFormat
{
    /// <summary>One line per message with a time stamp, for a terminal.</summary>
    Simple,

    /// <summary>
    /// systemd's console format: a <c>&lt;N&gt;</c> syslog priority prefix and no time stamp
    /// (journald adds its own and reads the priority).
    /// </summary>
    Systemd,
}

/// <summary>
/// Registration of what running as a service needs: the official systemd and Windows service
/// lifetimes, <see cref="SystemdWatchdog"/>, and the log's target and format.
/// </summary>
public static class ServiceHosting
{
    /// <summary>The values a <c>--log-format</c> option takes.</summary>
    public const string LogFormatValues = "simple or systemd";

    /// <summary>
    /// True when systemd started this process: it sets <c>INVOCATION_ID</c> for every unit and
    /// <c>JOURNAL_STREAM</c> when stdout or stderr goes to the journal.
    /// </summary>
    public static bool UnderSystemd(Func<string, string?> environment)
    {
        ArgumentNullException.ThrowIfNull(environment);
        return !string.IsNullOrEmpty(environment("INVOCATION_ID")) || !string.IsNullOrEmpty(environment("JOURNAL_STREAM"));
    }

    /// <summary>
    /// The format a <c>--log-format</c> value names; null or empty picks systemd's under systemd
    /// and the simple one otherwise. Returns false for a value that names neither.
    /// </summary>
    public static bool TryParseLogFormat(string? value, Func<string, string?> environment, out ConsoleLogFormat format)
    {
        switch (value?.Trim().ToLowerInvariant())
        {
            case null or "":
                format = UnderSystemd(environment) ? ConsoleLogFormat.Systemd : ConsoleLogFormat.Simple;
                return true;
            case "simple":
                format = ConsoleLogFormat.Simple;
                return true;
            case "systemd":
                format = ConsoleLogFormat.Systemd;
                return true;
            default:
                format = default;
                return false;
        }
    }

    /// <summary>The console logger in <paramref name="format"/>, one line per message.</summary>
    public static ILoggingBuilder AddHostConsole(this ILoggingBuilder logging, ConsoleLogFormat format)
    {
        ArgumentNullException.ThrowIfNull(logging);
        return format == ConsoleLogFormat.Systemd
            ? logging.AddSystemdConsole()
            : logging.AddSimpleConsole(o =>
            {
                o.SingleLine = true;
                o.TimestampFormat = "HH:mm:ss.fff ";
            });
    }

    /// <summary>
    /// The service lifetimes, each active only where it applies. Under systemd (the parent process)
    /// <c>AddSystemd</c> sends READY=1 once every hosted service has started and STOPPING=1 when a
    /// stop begins, and stops on SIGTERM; the same lifetime also runs when <c>NOTIFY_SOCKET</c> is
    /// set by another supervisor (a container's init, the deploy tests), which <c>AddSystemd</c>
    /// would ignore. Under the Windows Service Control Manager <c>AddWindowsService</c> reports
    /// start, running and stop to it as the service <paramref name="serviceName"/>, and adds the
    /// event log. Also the <see cref="ServiceStatus"/> and <see cref="SystemdWatchdog"/>. Call
    /// before adding the host's own hosted services so the watchdog starts first and stops last,
    /// and before the logging so an explicit <c>--log-format</c> wins over systemd's default.
    /// </summary>
    public static IServiceCollection AddServiceHosting(this IServiceCollection services, string serviceName, Func<string, string?> environment)
    {
        ArgumentNullException.ThrowIfNull(environment);
        services.AddSystemd();
        if (!SystemdHelpers.IsSystemdService() && !string.IsNullOrEmpty(environment("NOTIFY_SOCKET")))
        {
            services.AddSingleton<IHostLifetime, SystemdLifetime>();
        }

        services.TryAddSingleton<ISystemdNotifier, SystemdNotifier>();
        services.AddSingleton<ServiceStatus>();
        services.AddHostedService<SystemdWatchdog>();
        services.AddWindowsService(o => o.ServiceName = serviceName);
        return services;
    }

    /// <summary>
    /// The log <paramref name="options"/> choose: the console in its format, a file
    /// (<see cref="FileLoggerProvider"/>, opened here so a file that cannot be written is a
    /// <see cref="HostLoggingException"/> before the host starts), or the Windows event log.
    /// </summary>
    public static ILoggingBuilder AddHostLogging(this ILoggingBuilder logging, HostLogOptions options)
    {
        ArgumentNullException.ThrowIfNull(logging);
        ArgumentNullException.ThrowIfNull(options);
        switch (options.Target)
        {
            case LogTarget.File:
                var provider = new FileLoggerProvider(options.File!);
                // Registered through a factory so the container disposes (closes) it with the host.
                logging.Services.AddSingleton<ILoggerProvider>(_ => provider);
                return logging;
            case LogTarget.EventLog:
                if (!OperatingSystem.IsWindows())
                {
                    throw new HostLoggingException("--log-target eventlog: the Windows event log exists only on Windows; use console or file.");
                }

                return AddApplicationEventLog(logging, options.EventSource);
            default:
                return logging.AddHostConsole(options.Format);
        }
    }

    /// <summary>The Application event log under <paramref name="source"/> (the options, not an instance, so the provider <c>AddWindowsService</c> adds is the same one).</summary>
    [System.Runtime.Versioning.SupportedOSPlatform("windows")]
    private static ILoggingBuilder AddApplicationEventLog(ILoggingBuilder logging, string source) =>
        logging.AddEventLog(settings =>
        {
            settings.SourceName = source;
            settings.LogName = "Application";
        });
}
