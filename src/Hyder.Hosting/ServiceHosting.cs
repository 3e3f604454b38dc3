using System.Runtime.Versioning;
using Hyder.Hosting.Windows;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.EventLog;

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
/// Registration of what running as a service needs: <see cref="SystemdNotifyService"/> on Linux,
/// <see cref="WindowsServiceLifetime"/> on Windows, and the log's target and format.
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
    /// Registers the notify service and the <see cref="ServiceStatus"/> it reports. Call before
    /// adding the host's own hosted services so it starts first and stops last.
    /// </summary>
    public static IServiceCollection AddSystemdNotify(this IServiceCollection services)
    {
        services.AddSingleton<ServiceStatus>();
        services.AddHostedService<SystemdNotifyService>();
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

                return logging.AddEventLog(new EventLogSettings { SourceName = options.EventSource, LogName = "Application" });
            default:
                return logging.AddHostConsole(options.Format);
        }
    }

    /// <summary>
    /// The Windows service for a host started with <c>--service</c>, named <paramref name="name"/>,
    /// on the real SCM. The program keeps it across the host's life and calls
    /// <see cref="WindowsService.Complete"/> with its exit code at the end.
    /// </summary>
    [SupportedOSPlatform("windows")]
    public static WindowsService CreateWindowsService(string name) =>
        new(name, new Advapi32ServiceControlManager(), WindowsService.DefaultWaitHint, WindowsService.DefaultTickInterval, WindowsService.DefaultStartLimit, WindowsService.DefaultStopLimit);

    /// <summary>
    /// Replaces the console lifetime with <paramref name="service"/>'s: the host connects to the
    /// SCM before it starts its services and stops on the SCM's stop, shutdown and preshutdown.
    /// </summary>
    public static IServiceCollection AddWindowsServiceLifetime(this IServiceCollection services, WindowsService service)
    {
        ArgumentNullException.ThrowIfNull(service);
        services.AddSingleton(service);
        services.AddSingleton<IHostLifetime, WindowsServiceLifetime>();
        return services;
    }
}
