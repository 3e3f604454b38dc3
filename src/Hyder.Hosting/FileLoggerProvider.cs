using System.Globalization;
using System.Text;
using Microsoft.Extensions.Logging;

namespace Hyder.Hosting;

/// <summary>
/// A log file of our own (Microsoft's file logging is not in the box): the file is opened for
/// append at start, each event is one line written and flushed to the OS before the call returns,
/// and readers may open, tail or rotate the file meanwhile. A line holds the UTC time, the level,
/// the category and event id, the formatted message and the exception, newlines written as
/// <c>\n</c>; the message's state, scopes and the configuration are never written. When the file
/// passes <see cref="SizeLimit"/> it is renamed to <c>NAME.1</c> (replacing the previous one) and
/// a new file begins, so at most about twice the limit is kept.
/// </summary>
[ProviderAlias("File")]
public sealed class FileLoggerProvider : ILoggerProvider
{
    /// <summary>The default size at which the file rolls over: 64 MiB.</summary>
    public const long DefaultSizeLimit = 64L << 20;

    private readonly Lock _lock = new();
    private StreamWriter? _writer;
    private long _length;

    /// <summary>
    /// Opens (or creates, with its directory) <paramref name="path"/> for append. Throws
    /// <see cref="HostLoggingException"/> when it cannot, naming the file and the reason.
    /// </summary>
    public FileLoggerProvider(string path, long sizeLimit = DefaultSizeLimit)
    {
        ArgumentException.ThrowIfNullOrWhiteSpace(path);
        ArgumentOutOfRangeException.ThrowIfLessThan(sizeLimit, 1024);
        Path = System.IO.Path.GetFullPath(path);
        SizeLimit = sizeLimit;
        try
        {
            Directory.CreateDirectory(System.IO.Path.GetDirectoryName(Path)!);
            Open();
        }
        catch (Exception e) when (e is IOException or UnauthorizedAccessException or NotSupportedException)
        {
            throw new HostLoggingException($"--log-file {Path}: cannot be opened for writing: {e.Message}");
        }
    }

    /// <summary>The log file's full path.</summary>
    public string Path { get; }

    /// <summary>The size past which the file rolls over to <c>NAME.1</c>.</summary>
    public long SizeLimit { get; }

    /// <inheritdoc/>
    public ILogger CreateLogger(string categoryName) => new FileLogger(this, categoryName);

    /// <inheritdoc/>
    public void Dispose()
    {
        lock (_lock)
        {
            _writer?.Dispose();
            _writer = null;
        }
    }

    /// <summary>The line for one event, without the newline.</summary>
    internal static string FormatLine(DateTimeOffset time, LogLevel level, string category, EventId eventId, string message, Exception? exception)
    {
        var line = new StringBuilder(64 + category.Length + message.Length);
        line.Append(time.UtcDateTime.ToString("yyyy-MM-dd'T'HH:mm:ss.fff'Z'", CultureInfo.InvariantCulture))
            .Append(' ')
            .Append(LevelName(level))
            .Append(' ')
            .Append(category)
            .Append('[')
            .Append(eventId.Id.ToString(CultureInfo.InvariantCulture))
            .Append("] ");
        AppendEscaped(line, message);
        if (exception is not null)
        {
            line.Append(" | ");
            AppendEscaped(line, exception.ToString());
        }

        return line.ToString();
    }

    internal void Write(string line)
    {
        lock (_lock)
        {
            if (_writer is null)
            {
                return;
            }

            try
            {
                if (_length > 0 && _length + line.Length + 1 > SizeLimit)
                {
                    Roll();
                }

                _writer.WriteLine(line);
                _length += Encoding.UTF8.GetByteCount(line) + 1;
            }
            catch (IOException)
            {
                // A full disk must not stop the server; the event is lost, the next one tries again.
            }
        }
    }

    private void Open()
    {
        var stream = new FileStream(Path, FileMode.Append, FileAccess.Write, FileShare.ReadWrite | FileShare.Delete);
        _length = stream.Length;
        _writer = new StreamWriter(stream, new UTF8Encoding(encoderShouldEmitUTF8Identifier: false)) { AutoFlush = true, NewLine = "\n" };
    }

    private void Roll()
    {
        _writer!.Dispose();
        File.Move(Path, Path + ".1", overwrite: true);
        Open();
    }

    private static string LevelName(LogLevel level) => level switch
    {
        LogLevel.Trace => "trce",
        LogLevel.Debug => "dbug",
        LogLevel.Information => "info",
        LogLevel.Warning => "warn",
        LogLevel.Error => "fail",
        LogLevel.Critical => "crit",
        _ => "none",
    };

    private static void AppendEscaped(StringBuilder line, string text)
    {
        foreach (var c in text)
        {
            switch (c)
            {
                case '\r':
                    break;
                case '\n':
                    line.Append("\\n");
                    break;
                default:
                    line.Append(c);
                    break;
            }
        }
    }

    private sealed class FileLogger(FileLoggerProvider provider, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => logLevel != LogLevel.None;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            if (!IsEnabled(logLevel))
            {
                return;
            }

            ArgumentNullException.ThrowIfNull(formatter);
            provider.Write(FormatLine(DateTimeOffset.UtcNow, logLevel, category, eventId, formatter(state, exception), exception));
        }
    }
}
