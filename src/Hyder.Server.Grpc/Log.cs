using Microsoft.Extensions.Logging;

namespace Hyder.Server.Grpc;

internal static partial class Log
{
    [LoggerMessage(1, LogLevel.Error, "{Method} failed unexpectedly")]
    public static partial void Unexpected(ILogger logger, string method, Exception exception);

    [LoggerMessage(2, LogLevel.Debug, "{Method} refused: {Code} {Reason}")]
    public static partial void Refused(ILogger logger, string method, string code, string reason);
}
