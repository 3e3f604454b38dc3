namespace Hyder.Hosting;

/// <summary>Where a host writes its log.</summary>
public enum LogTarget
{
    /// <summary>The console (stdout), in a <see cref="ConsoleLogFormat"/>: a terminal, or journald under systemd.</summary>
    Console,

    /// <summary>A file of our own format (<see cref="FileLoggerProvider"/>).</summary>
    File,

    /// <summary>The Windows Application event log, under an event source named for the service. Windows only.</summary>
    EventLog,
}

/// <summary>
/// The options both hosts take about running as a service and where their log goes, read and
/// checked once: <c>--service</c>, <c>--log-target</c>, <c>--log-format</c>, <c>--log-file</c>,
/// <c>--event-source</c>.
/// </summary>
public sealed record HostLogOptions
{
    /// <summary>The values <c>--log-target</c> takes.</summary>
    public const string TargetValues = "console, file or eventlog";

    /// <summary>Runs as a Windows service (the install script passes <c>--service</c>): the log defaults to the event log.</summary>
    public bool Service { get; init; }

    /// <summary>Where the log goes.</summary>
    public LogTarget Target { get; init; }

    /// <summary>The console format, for <see cref="LogTarget.Console"/>.</summary>
    public ConsoleLogFormat Format { get; init; }

    /// <summary>The log file's full path, for <see cref="LogTarget.File"/>.</summary>
    public string? File { get; init; }

    /// <summary>The event source (and, as a service, the service's name).</summary>
    public required string EventSource { get; init; }

    /// <summary>
    /// Reads and checks the options. <paramref name="describe"/> turns an option's name into the
    /// words a message uses for it (the server adds its configuration key). Throws
    /// <see cref="HostLoggingException"/> with a sentence that says what to change.
    /// </summary>
    /// <param name="service">Whether <c>--service</c> was given.</param>
    /// <param name="target">The <c>--log-target</c> value; empty picks eventlog as a service, console otherwise.</param>
    /// <param name="format">The <c>--log-format</c> value.</param>
    /// <param name="file">The <c>--log-file</c> value.</param>
    /// <param name="eventSource">The <c>--event-source</c> value; empty takes <paramref name="defaultName"/>.</param>
    /// <param name="defaultName">The host's name: hyder-server or hyder-log.</param>
    /// <param name="environment">Reads environment variables (systemd's, for the console format).</param>
    /// <param name="isWindows">Whether this is Windows (tests pass either).</param>
    /// <param name="describe">Names an option in messages; null uses the option as it is.</param>
    public static HostLogOptions Read(
        bool service,
        string? target,
        string? format,
        string? file,
        string? eventSource,
        string defaultName,
        Func<string, string?> environment,
        bool isWindows,
        Func<string, string>? describe = null)
    {
        ArgumentNullException.ThrowIfNull(environment);
        describe ??= static option => option;
        if (service && !isWindows)
        {
            throw new HostLoggingException(
                $"{describe("--service")} runs the host under the Windows Service Control Manager, which exists only on Windows; under systemd use the units in deploy/linux.");
        }

        if (!ServiceHosting.TryParseLogFormat(format, environment, out var consoleFormat))
        {
            throw new HostLoggingException($"{describe("--log-format")} '{format}' is not {ServiceHosting.LogFormatValues}.");
        }

        LogTarget logTarget;
        switch (target?.Trim().ToLowerInvariant())
        {
            case null or "":
                logTarget = service ? LogTarget.EventLog : LogTarget.Console;
                break;
            case "console":
                logTarget = LogTarget.Console;
                break;
            case "file":
                logTarget = LogTarget.File;
                break;
            case "eventlog":
                logTarget = LogTarget.EventLog;
                break;
            default:
                throw new HostLoggingException($"{describe("--log-target")} '{target}' is not {TargetValues}.");
        }

        if (logTarget == LogTarget.EventLog && !isWindows)
        {
            throw new HostLoggingException(
                $"{describe("--log-target")} eventlog: the Windows event log exists only on Windows; use console or file.");
        }

        if (logTarget == LogTarget.File && string.IsNullOrWhiteSpace(file))
        {
            throw new HostLoggingException($"{describe("--log-target")} file needs {describe("--log-file")} with the log file's path.");
        }

        if (logTarget != LogTarget.File && !string.IsNullOrWhiteSpace(file))
        {
            throw new HostLoggingException($"{describe("--log-file")} is used only with {describe("--log-target")} file (the target is {logTarget.ToString().ToLowerInvariant()}).");
        }

        var source = string.IsNullOrWhiteSpace(eventSource) ? defaultName : eventSource.Trim();
        if (source.Length > 255 || source.Any(c => c is '\\' || char.IsControl(c)))
        {
            throw new HostLoggingException($"{describe("--event-source")} '{source}' is not a service or event source name (at most 255 characters, no backslash).");
        }

        string? fullPath = null;
        if (logTarget == LogTarget.File)
        {
            try
            {
                fullPath = Path.GetFullPath(file!);
            }
            catch (Exception e) when (e is ArgumentException or NotSupportedException or PathTooLongException)
            {
                throw new HostLoggingException($"{describe("--log-file")} '{file}' is not a path: {e.Message}");
            }

            if (Directory.Exists(fullPath))
            {
                throw new HostLoggingException($"{describe("--log-file")} {fullPath} is a directory; name a file in it.");
            }
        }

        return new HostLogOptions
        {
            Service = service,
            Target = logTarget,
            Format = consoleFormat,
            File = fullPath,
            EventSource = source,
        };
    }
}

/// <summary>Logging or service options the host cannot run with; the message says what to change (exit code 2).</summary>
public sealed class HostLoggingException(string message) : Exception(message);
