using Grpc.Core;
using Grpc.Core.Interceptors;
using Hyder.Security;
using Hyder.Server.Engine;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Grpc;

/// <summary>
/// Runs before every method of every service on the server: establishes the caller
/// (<see cref="ClientAuthenticator"/>; UNAUTHENTICATED or PERMISSION_DENIED), checks the method's
/// role (<see cref="HyderAccess"/>), keeps the caller for per-operation checks, and maps failures
/// to statuses: an <see cref="EngineException"/> to its code (<see cref="ToStatusCode"/>) with the
/// reason; anything unexpected to INTERNAL with a fixed message (the exception is logged, never sent).
/// </summary>
/// <param name="authenticator">Who may call; null lets every caller call everything (an admin).</param>
/// <param name="logger">Where refusals and unexpected failures go.</param>
public sealed partial class HyderInterceptor(ClientAuthenticator? authenticator, ILogger<HyderInterceptor> logger) : Interceptor
{
    private const string CallerKey = "hyder.caller";

    private static readonly CallerIdentity s_unchecked = new("anonymous", ClientRole.Admin, CallerIdentity.AnonymousScheme);

    /// <summary>The caller of a call, as this interceptor established it.</summary>
    /// <param name="context">The call.</param>
    /// <returns>The caller; an admin where the server checks no credentials.</returns>
    public static CallerIdentity Caller(ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        return context.UserState.TryGetValue(CallerKey, out var caller) && caller is CallerIdentity identity ? identity : s_unchecked;
    }

    /// <summary>The gRPC status code for an engine's refusal.</summary>
    /// <param name="code">The engine's error code.</param>
    /// <returns>The status code.</returns>
    public static StatusCode ToStatusCode(EngineErrorCode code) => code switch
    {
        EngineErrorCode.InvalidArgument => StatusCode.InvalidArgument,
        EngineErrorCode.ResourceExhausted => StatusCode.ResourceExhausted,
        EngineErrorCode.Unavailable => StatusCode.Unavailable,
        EngineErrorCode.FailedPrecondition => StatusCode.FailedPrecondition,
        EngineErrorCode.Aborted => StatusCode.Aborted,
        _ => StatusCode.Internal,
    };

    /// <inheritdoc/>
    public override async Task<TResponse> UnaryServerHandler<TRequest, TResponse>(TRequest request, ServerCallContext context, UnaryServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        Admit(context);
        try
        {
            return await continuation(request, context).ConfigureAwait(false);
        }
        catch (Exception e) when (Map(context, e) is { } mapped)
        {
            throw mapped;
        }
    }

    /// <inheritdoc/>
    public override async Task ServerStreamingServerHandler<TRequest, TResponse>(TRequest request, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, ServerStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        Admit(context);
        try
        {
            await continuation(request, responseStream, context).ConfigureAwait(false);
        }
        catch (Exception e) when (Map(context, e) is { } mapped)
        {
            throw mapped;
        }
    }

    /// <inheritdoc/>
    public override async Task<TResponse> ClientStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, ServerCallContext context, ClientStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        Admit(context);
        try
        {
            return await continuation(requestStream, context).ConfigureAwait(false);
        }
        catch (Exception e) when (Map(context, e) is { } mapped)
        {
            throw mapped;
        }
    }

    /// <inheritdoc/>
    public override async Task DuplexStreamingServerHandler<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, IServerStreamWriter<TResponse> responseStream, ServerCallContext context, DuplexStreamingServerMethod<TRequest, TResponse> continuation)
    {
        ArgumentNullException.ThrowIfNull(continuation);
        Admit(context);
        try
        {
            await continuation(requestStream, responseStream, context).ConfigureAwait(false);
        }
        catch (Exception e) when (Map(context, e) is { } mapped)
        {
            throw mapped;
        }
    }

    /// <summary>Refuses a call whose caller is unknown or below the method's role; keeps the caller otherwise.</summary>
    private void Admit(ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        if (authenticator is null)
        {
            return;
        }

        var http = context.GetHttpContext();
        var result = authenticator.Authenticate(http);
        if (result.Caller is not { } caller)
        {
            LogRefused(context.Method, Address(http), result.Refusal.StatusCode, result.Refusal.Detail);
            throw new RpcException(result.Refusal);
        }

        var required = HyderAccess.RequiredRole(context.Method);
        if (caller.Role < required)
        {
            var detail = $"{caller.Name} ({ClientRoles.Name(caller.Role)}) may not call {context.Method}: it needs the {ClientRoles.Name(required)} role.";
            LogRefused(context.Method, Address(http), StatusCode.PermissionDenied, detail);
            throw new RpcException(new Status(StatusCode.PermissionDenied, detail));
        }

        context.UserState[CallerKey] = caller;
    }

    /// <summary>The caller's address, for the log line of a refusal.</summary>
    private static string Address(Microsoft.AspNetCore.Http.HttpContext http) => http.Connection.RemoteIpAddress?.ToString() ?? "unknown";

    /// <summary>The status to end the call with, or null to let Grpc.AspNetCore handle the exception (a status of ours, or the call's own cancellation).</summary>
    private RpcException? Map(ServerCallContext context, Exception e)
    {
        switch (e)
        {
            case RpcException:
                return null;
            case EngineException engine:
                var code = ToStatusCode(engine.Code);
                LogEngineRefused(context.Method, code, engine.Message);
                return new RpcException(new Status(code, engine.Message));
            case OperationCanceledException when context.CancellationToken.IsCancellationRequested:
                return null;
            default:
                LogUnexpected(context.Method, e);
                return new RpcException(new Status(StatusCode.Internal, "internal error"));
        }
    }

    // The detail never holds a credential: the authenticator's refusals name no token.
    [LoggerMessage(1, LogLevel.Information, "Refused {Method} from {Address} with {StatusCode}: {Detail}")]
    private partial void LogRefused(string method, string address, StatusCode statusCode, string detail);

    [LoggerMessage(2, LogLevel.Debug, "{Method} refused: {Code} {Reason}")]
    private partial void LogEngineRefused(string method, StatusCode code, string reason);

    [LoggerMessage(3, LogLevel.Error, "{Method} failed unexpectedly")]
    private partial void LogUnexpected(string method, Exception exception);
}
