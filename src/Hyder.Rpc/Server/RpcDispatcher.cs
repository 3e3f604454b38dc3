using Hyder.Rpc.Security;
using Microsoft.AspNetCore.Http;
using Microsoft.AspNetCore.Http.Features;
using Microsoft.AspNetCore.Server.Kestrel.Core.Features;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Rpc;

/// <summary>
/// Serves gRPC calls from ASP.NET Core requests. <see cref="RpcServer"/> runs it on its own
/// Kestrel; an existing ASP.NET Core application can mount it with <c>app.Run(dispatcher.HandleAsync)</c>.
/// </summary>
public sealed class RpcDispatcher
{
    // Kestrel's own grace period for a stream it resets; a client that has the status ends its side within a round trip.
    private static readonly TimeSpan s_drainTimeout = TimeSpan.FromSeconds(5);

    private readonly RpcServiceRegistry _services;
    private readonly RpcServerOptions _options;
    private readonly ILogger _logger;

    /// <summary>Creates a dispatcher for the registered methods.</summary>
    /// <param name="services">The methods; do not register more once calls arrive.</param>
    /// <param name="options">Settings; defaults when null.</param>
    public RpcDispatcher(RpcServiceRegistry services, RpcServerOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(services);
        _services = services;
        _options = options ?? new RpcServerOptions();
        _logger = _options.LoggerFactory?.CreateLogger<RpcDispatcher>() ?? NullLogger<RpcDispatcher>.Instance;
    }

    /// <summary>Serves one request as a gRPC call.</summary>
    /// <param name="context">The request.</param>
    /// <returns>A task that completes when the call is over.</returns>
    public async Task HandleAsync(HttpContext context)
    {
        ArgumentNullException.ThrowIfNull(context);
        var request = context.Request;
        var response = context.Response;
        if (!HttpMethods.IsPost(request.Method))
        {
            response.StatusCode = StatusCodes.Status405MethodNotAllowed;
            response.Headers.Allow = "POST";
            return;
        }

        if (!HttpProtocol.IsHttp2(request.Protocol) && !HttpProtocol.IsHttp3(request.Protocol))
        {
            RejectHttp(response, StatusCodes.Status426UpgradeRequired, $"gRPC needs HTTP/2; the request came over {request.Protocol}.");
            return;
        }

        if (!GrpcProtocol.IsProtoContentType(request.ContentType))
        {
            // PROTOCOL-HTTP2.md: a content type not starting with application/grpc SHOULD get 415.
            RejectHttp(response, StatusCodes.Status415UnsupportedMediaType, $"Content-Type '{request.ContentType}' is not supported; this server speaks application/grpc (proto).");
            return;
        }

        var path = request.Path.Value ?? string.Empty;
        CallerIdentity? caller = null;
        if (_options.Authenticator is { } authenticator)
        {
            // Before the method lookup: a caller without credentials learns nothing about the service.
            var result = authenticator.Authenticate(context);
            if (result.Caller is null)
            {
                Log.Refused(_logger, path, result.Refusal.StatusCode, result.Refusal.Detail, context.Connection.RemoteIpAddress?.ToString() ?? "unknown");
                TrailersOnly(response, result.Refusal.StatusCode, result.Refusal.Detail);
                await EndAsync(context).ConfigureAwait(false);
                return;
            }

            caller = result.Caller;
        }

        if (!_services.TryGetHandler(path, out var handler))
        {
            TrailersOnly(response, StatusCode.Unimplemented, $"Method {path} is unimplemented.");
            await EndAsync(context).ConfigureAwait(false);
            return;
        }

        if (caller is not null && _options.RequiredRole?.Invoke(path) is { } required && caller.Role < required)
        {
            var detail = $"{caller.Name} ({ClientRoles.Name(caller.Role)}) may not call {path}: it needs the {ClientRoles.Name(required)} role.";
            Log.Refused(_logger, path, StatusCode.PermissionDenied, detail, context.Connection.RemoteIpAddress?.ToString() ?? "unknown");
            TrailersOnly(response, StatusCode.PermissionDenied, detail);
            await EndAsync(context).ConfigureAwait(false);
            return;
        }

        var encoding = request.Headers[GrpcProtocol.EncodingHeader].ToString();
        if (encoding.Length > 0 && !encoding.Equals(GrpcProtocol.IdentityEncoding, StringComparison.OrdinalIgnoreCase))
        {
            // PROTOCOL-HTTP2.md: an unsupported encoding gets UNIMPLEMENTED and the encodings we accept.
            response.Headers[GrpcProtocol.AcceptEncodingHeader] = GrpcProtocol.IdentityEncoding;
            TrailersOnly(response, StatusCode.Unimplemented, $"Message encoding '{encoding}' is not supported.");
            await EndAsync(context).ConfigureAwait(false);
            return;
        }

        TimeSpan? timeout = null;
        var timeoutText = request.Headers[GrpcProtocol.TimeoutHeader].ToString();
        if (timeoutText.Length > 0)
        {
            if (GrpcTimeout.TryParse(timeoutText, out var parsed))
            {
                timeout = parsed;
            }
            else
            {
                Log.MalformedTimeout(_logger, timeoutText, path);
            }
        }

        // Streams may be long and idle: Kestrel's body size and minimum data rate limits would cut them.
        if (context.Features.Get<IHttpMaxRequestBodySizeFeature>() is { IsReadOnly: false } maxBody)
        {
            maxBody.MaxRequestBodySize = null;
        }

        if (context.Features.Get<IHttpMinRequestBodyDataRateFeature>() is { } minRate)
        {
            minRate.MinDataRate = null;
        }

        using var call = new ServerCall(context, _options, path, timeout, caller);
        var run = RunAsync(handler, call);
        if (call.DeadlineReached is { } deadline && await Task.WhenAny(run, deadline).ConfigureAwait(false) == deadline)
        {
            // The deadline ends the call now, whether or not the handler notices its token.
            await call.FinishAsync(new Status(StatusCode.DeadlineExceeded, "Deadline exceeded."), null).ConfigureAwait(false);
        }

        // The handler may still use the HttpContext: the request ends only when it returns.
        await run.ConfigureAwait(false);
        await DrainRequestAsync(context).ConfigureAwait(false);
    }

    private async Task RunAsync(MethodHandler handler, ServerCall call)
    {
        Status status;
        Metadata? trailers = null;
        try
        {
            await handler.InvokeAsync(call).ConfigureAwait(false);
            status = call.Status;
        }
        catch (RpcException e)
        {
            status = e.Status;
            trailers = e.Trailers;
        }
        catch (OperationCanceledException) when (call.DeadlineExceeded)
        {
            status = new Status(StatusCode.DeadlineExceeded, "Deadline exceeded.");
        }
        catch (Exception) when (call.ClientCancelled)
        {
            status = new Status(StatusCode.Cancelled, "The client cancelled the call.");
        }
        catch (Exception e)
        {
            Log.HandlerFailed(_logger, call.Method, e);
            status = new Status(StatusCode.Unknown, _options.IncludeExceptionDetails
                ? $"Exception was thrown by handler. {e.GetType().Name}: {e.Message}"
                : "Exception was thrown by handler.");
        }

        if (status.StatusCode != StatusCode.OK)
        {
            Log.CallFailed(_logger, call.Method, status.StatusCode, status.Detail);
        }

        await call.FinishAsync(status, trailers).ConfigureAwait(false);
    }

    /// <summary>Sends a Trailers-Only response now, then waits for the request stream's end like a finished call.</summary>
    private static async Task EndAsync(HttpContext context)
    {
        try
        {
            await context.Response.CompleteAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or OperationCanceledException)
        {
            // The client went away: there is no one to tell.
            return;
        }

        await DrainRequestAsync(context).ConfigureAwait(false);
    }

    /// <summary>
    /// Waits, once the status is sent, for the end of the request stream (the client's END_STREAM
    /// or RST_STREAM), discarding any requests the handler left unread, for at most
    /// <see cref="s_drainTimeout"/>. A request that ends before its request stream makes Kestrel
    /// reset the stream with NO_ERROR, after which the client may send nothing more on it, not even
    /// END_STREAM; Kestrel then tracks the stream for 5 s, and refuses every new stream on a
    /// connection that tracks more than max(2 × <c>MaxStreamsPerConnection</c>, 100) (200 by
    /// default) with ENHANCE_YOUR_CALM. Duplex and client-streaming handlers that return before the
    /// client half-closes (a transaction's commit, an error) would exhaust a connection within 200
    /// calls. A client ends its side when it reads the status; one that does not is left to Kestrel.
    /// </summary>
    private static async Task DrainRequestAsync(HttpContext context)
    {
        var reader = context.Request.BodyReader;
        try
        {
            // Unary and server-streaming calls, and streaming calls the client half-closed, end here.
            if (reader.TryRead(out var ready))
            {
                reader.AdvanceTo(ready.Buffer.End);
                if (ready.IsCompleted)
                {
                    return;
                }
            }

            using var timeout = CancellationTokenSource.CreateLinkedTokenSource(context.RequestAborted);
            timeout.CancelAfter(s_drainTimeout);
            while (true)
            {
                var result = await reader.ReadAsync(timeout.Token).ConfigureAwait(false);
                reader.AdvanceTo(result.Buffer.End);
                if (result.IsCompleted || result.IsCanceled)
                {
                    return;
                }
            }
        }
        catch (Exception e) when (e is IOException or OperationCanceledException or InvalidOperationException)
        {
            // Reset by the client, past the timeout, or a read the handler left pending: Kestrel takes over.
        }
    }

    private static void TrailersOnly(HttpResponse response, StatusCode code, string detail)
    {
        response.StatusCode = StatusCodes.Status200OK;
        response.ContentType = GrpcProtocol.ContentType;
        response.Headers[GrpcProtocol.StatusHeader] = ((int)code).ToString(System.Globalization.CultureInfo.InvariantCulture);
        response.Headers[GrpcProtocol.MessageHeader] = PercentEncoding.Encode(detail);
    }

    private static void RejectHttp(HttpResponse response, int httpStatus, string detail)
    {
        response.StatusCode = httpStatus;
        response.Headers[GrpcProtocol.StatusHeader] = ((int)StatusCode.Internal).ToString(System.Globalization.CultureInfo.InvariantCulture);
        response.Headers[GrpcProtocol.MessageHeader] = PercentEncoding.Encode(detail);
    }
}
