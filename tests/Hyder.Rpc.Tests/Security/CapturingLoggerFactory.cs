using System.Collections.Concurrent;
using Microsoft.Extensions.Logging;

namespace Hyder.Rpc.Tests.Security;

/// <summary>Keeps every log line at every level, with its exception, for tests that read the log.</summary>
internal sealed class CapturingLoggerFactory : ILoggerFactory
{
    public ConcurrentQueue<string> Lines { get; } = new();

    public string Text => string.Join('\n', Lines);

    public ILogger CreateLogger(string categoryName) => new Logger(this, categoryName);

    public void AddProvider(ILoggerProvider provider)
    {
    }

    public void Dispose()
    {
    }

    private sealed class Logger(CapturingLoggerFactory factory, string category) : ILogger
    {
        public IDisposable? BeginScope<TState>(TState state)
            where TState : notnull => null;

        public bool IsEnabled(LogLevel logLevel) => true;

        public void Log<TState>(LogLevel logLevel, EventId eventId, TState state, Exception? exception, Func<TState, Exception?, string> formatter)
        {
            var properties = state is IEnumerable<KeyValuePair<string, object?>> pairs ? string.Join(", ", pairs.Select(p => $"{p.Key}={p.Value}")) : string.Empty;
            factory.Lines.Enqueue($"{logLevel} {category}: {formatter(state, exception)} [{properties}] {exception}");
        }
    }
}
