using Microsoft.Extensions.Logging;

namespace Hyder.Client;

internal static partial class Log
{
    [LoggerMessage(1, LogLevel.Debug, "Transaction aborted ({Cause}: {Detail}); retry {Attempt} of {MaxRetries} in {DelayMs} ms")]
    public static partial void Retrying(ILogger logger, AbortCause cause, string detail, int attempt, int maxRetries, double delayMs);

    [LoggerMessage(2, LogLevel.Warning, "Transaction aborted ({Cause}: {Detail}) after {MaxRetries} retries; giving up")]
    public static partial void GivingUp(ILogger logger, AbortCause cause, string detail, int maxRetries);

    [LoggerMessage(3, LogLevel.Debug, "Aborting the transaction on dispose failed")]
    public static partial void AbortOnDisposeFailed(ILogger logger, Exception exception);

    [LoggerMessage(4, LogLevel.Debug, "Server unavailable ({Detail}); retry {Attempt} of {MaxRetries}")]
    public static partial void RetryingUnavailable(ILogger logger, string detail, int attempt, int maxRetries);
}
