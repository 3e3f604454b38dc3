using Microsoft.Extensions.DependencyInjection;
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

/// <summary>Registration of what <see cref="SystemdNotifyService"/> and the console format need.</summary>
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
}
