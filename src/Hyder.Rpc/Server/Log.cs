using Microsoft.Extensions.Logging;

namespace Hyder.Rpc;

internal static partial class Log
{
    [LoggerMessage(1, LogLevel.Error, "The handler of {Method} threw an exception")]
    public static partial void HandlerFailed(ILogger logger, string method, Exception exception);

    [LoggerMessage(2, LogLevel.Debug, "Ignoring a malformed grpc-timeout '{Value}' on {Method}")]
    public static partial void MalformedTimeout(ILogger logger, string value, string method);

    [LoggerMessage(3, LogLevel.Debug, "{Method} ended with {StatusCode}: {Detail}")]
    public static partial void CallFailed(ILogger logger, string method, StatusCode statusCode, string detail);
}
