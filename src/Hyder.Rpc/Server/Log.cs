using Microsoft.Extensions.Logging;

namespace Hyder.Rpc;

internal static partial class Log
{
    [LoggerMessage(1, LogLevel.Error, "The handler of {Method} threw an exception")]
    public static partial void HandlerFailed(ILogger logger, string method, Exception exception);

    [LoggerMessage(2, LogLevel.Debug, "Ignoring a malformed grpc-timeout '{Value}' on {Method}")]
    public static partial void MalformedTimeout(ILogger logger, string value, string method);

    // The detail never holds a credential: RpcAuthenticator's refusals name no token.
    [LoggerMessage(4, LogLevel.Information, "Refused {Method} from {Address} with {StatusCode}: {Detail}")]
    public static partial void Refused(ILogger logger, string method, StatusCode statusCode, string detail, string address);

    [LoggerMessage(3, LogLevel.Debug, "{Method} ended with {StatusCode}: {Detail}")]
    public static partial void CallFailed(ILogger logger, string method, StatusCode statusCode, string detail);
}
