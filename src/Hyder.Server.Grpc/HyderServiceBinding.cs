using Hyder.Api;
using V1 = Hyder.Api.V1;
using Hyder.Rpc;
using Hyder.Rpc.Security;
using Hyder.Server.Engine;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Server.Grpc;

/// <summary>
/// Hosts a <see cref="HyderService"/> on Hyder.Rpc: registers its seven methods and maps failures
/// to gRPC statuses. This is the only place the service meets Hyder.Rpc's types.
/// </summary>
/// <remarks>
/// <see cref="EngineException"/> → its code (<see cref="ToStatusCode"/>) with the reason as the
/// status message; the call's own cancellation → CANCELLED or DEADLINE_EXCEEDED (Hyder.Rpc decides
/// which); anything else → INTERNAL with a fixed message (the exception is logged, never sent).
/// </remarks>
public static class HyderServiceBinding
{
    /// <summary>Registers every method of <c>hyder.v1.Hyder</c>.</summary>
    /// <param name="registry">The server's method registry.</param>
    /// <param name="service">The service.</param>
    /// <param name="logger">Where unexpected failures are logged; none when null.</param>
    /// <returns>The registry.</returns>
    public static RpcServiceRegistry Register(RpcServiceRegistry registry, HyderService service, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(registry);
        ArgumentNullException.ThrowIfNull(service);
        var log = logger ?? NullLogger.Instance;
        return registry
            .AddUnary(HyderMethods.Execute, (request, context) => Guard(log, context, () =>
            {
                foreach (var operation in request.Operations)
                {
                    CheckWrite(context, operation);
                }

                return service.ExecuteAsync(request, context.CancellationToken);
            }))
            .AddUnary(HyderMethods.Read, (request, context) => Guard(log, context, () => service.ReadAsync(request, context.CancellationToken)))
            .AddUnary(HyderMethods.Status, (request, context) => Guard(log, context, () => service.StatusAsync(request, context.CancellationToken)))
            .AddUnary(HyderMethods.StateHash, (request, context) => Guard(log, context, () => service.StateHashAsync(request, context.CancellationToken)))
            .AddUnary(HyderMethods.Checkpoint, (request, context) => Guard(log, context, () => service.CheckpointAsync(request, context.CancellationToken)))
            .AddServerStreaming(HyderMethods.Scan, (request, responses, context) =>
                Guard(log, context, () => service.ScanAsync(request, new Writer<V1.ScanResponse>(responses), context.CancellationToken)))
            .AddDuplexStreaming(HyderMethods.Transact, (requests, responses, context) =>
                Guard(log, context, () => service.TransactAsync(CheckWrites(context, requests.ReadAllAsync(context.CancellationToken)), new Writer<V1.TransactResponse>(responses), context.CancellationToken)));
    }

    /// <summary>
    /// Sets the server's message size limits to the engine's <see cref="EngineLimits.MaxMessageBytes"/>:
    /// a larger request is refused with RESOURCE_EXHAUSTED before it is read.
    /// </summary>
    /// <param name="options">The server's options.</param>
    /// <param name="limits">The engine's limits.</param>
    /// <returns>The options.</returns>
    public static RpcServerOptions ApplyLimits(RpcServerOptions options, EngineLimits limits)
    {
        ArgumentNullException.ThrowIfNull(options);
        ArgumentNullException.ThrowIfNull(limits);
        options.MaxReceiveMessageSize = limits.MaxMessageBytes;
        options.MaxSendMessageSize = limits.MaxMessageBytes;
        return options;
    }

    /// <summary>
    /// The role each method needs, for <see cref="RpcServerOptions.RequiredRole"/>; the writes inside
    /// Execute and Transact are checked here, per operation, against the caller's role.
    /// </summary>
    /// <param name="fullMethodName">The method.</param>
    /// <returns>The least role that may call it.</returns>
    public static ClientRole RequiredRole(string fullMethodName) => HyderAccess.RequiredRole(fullMethodName);

    /// <summary>PERMISSION_DENIED for a write by an authenticated caller below the writer role; nothing without authentication.</summary>
    private static void CheckWrite(ServerCallContext context, V1.Operation operation)
    {
        if (context.Caller is { Role: < ClientRole.Writer } caller && HyderAccess.IsWrite(operation))
        {
            throw new RpcException(StatusCode.PermissionDenied, $"{caller.Name} ({ClientRoles.Name(caller.Role)}) may only read: a {operation.Kind} needs the writer role.");
        }
    }

    private static async IAsyncEnumerable<V1.TransactRequest> CheckWrites(ServerCallContext context, IAsyncEnumerable<V1.TransactRequest> requests)
    {
        await foreach (var request in requests.ConfigureAwait(false))
        {
            if (request.RequestCase == V1.TransactRequest.RequestOneofCase.Operation)
            {
                // Before the operation reaches the transaction: the stream ends and the transaction aborts.
                CheckWrite(context, request.Operation);
            }

            yield return request;
        }
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

    private static async Task<T> Guard<T>(ILogger logger, ServerCallContext context, Func<Task<T>> body)
    {
        try
        {
            return await body().ConfigureAwait(false);
        }
        catch (Exception e) when (Map(logger, context, e) is { } mapped)
        {
            throw mapped;
        }
    }

    private static async Task Guard(ILogger logger, ServerCallContext context, Func<Task> body)
    {
        try
        {
            await body().ConfigureAwait(false);
        }
        catch (Exception e) when (Map(logger, context, e) is { } mapped)
        {
            throw mapped;
        }
    }

    /// <summary>The status to end the call with, or null to let Hyder.Rpc handle the exception (its own, or cancellation).</summary>
    private static RpcException? Map(ILogger logger, ServerCallContext context, Exception e)
    {
        switch (e)
        {
            case RpcException:
                return null;
            case EngineException engine:
                var code = ToStatusCode(engine.Code);
                Log.Refused(logger, context.Method, code.ToString(), engine.Message);
                return new RpcException(code, engine.Message);
            case OperationCanceledException when context.CancellationToken.IsCancellationRequested:
                return null;
            default:
                Log.Unexpected(logger, context.Method, e);
                return new RpcException(StatusCode.Internal, "internal error");
        }
    }

    private sealed class Writer<T>(IServerStreamWriter<T> inner) : IResponseStream<T>
    {
        public Task WriteAsync(T message) => inner.WriteAsync(message);
    }
}
