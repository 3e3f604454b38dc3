using Google.Protobuf;

namespace Hyder.Rpc;

/// <summary>A registered method: reads its requests, runs the handler, writes its responses.</summary>
internal abstract class MethodHandler
{
    public abstract Task InvokeAsync(ServerCall call);
}

internal sealed class UnaryHandler<TRequest, TResponse>(Method<TRequest, TResponse> method, UnaryServerMethod<TRequest, TResponse> handler) : MethodHandler
    where TRequest : class, IMessage<TRequest>
    where TResponse : class, IMessage<TResponse>
{
    public override async Task InvokeAsync(ServerCall call)
    {
        var request = await call.ReadSingleAsync(method.RequestParser).ConfigureAwait(false);
        var response = await handler(request, call).ConfigureAwait(false);
        await call.WriteAsync(response ?? throw new InvalidOperationException($"The handler of {method.FullName} returned no response.")).ConfigureAwait(false);
    }
}

internal sealed class ServerStreamingHandler<TRequest, TResponse>(Method<TRequest, TResponse> method, ServerStreamingServerMethod<TRequest, TResponse> handler) : MethodHandler
    where TRequest : class, IMessage<TRequest>
    where TResponse : class, IMessage<TResponse>
{
    public override async Task InvokeAsync(ServerCall call)
    {
        var request = await call.ReadSingleAsync(method.RequestParser).ConfigureAwait(false);
        await handler(request, new ServerResponseStream<TResponse>(call), call).ConfigureAwait(false);
    }
}

internal sealed class ClientStreamingHandler<TRequest, TResponse>(Method<TRequest, TResponse> method, ClientStreamingServerMethod<TRequest, TResponse> handler) : MethodHandler
    where TRequest : class, IMessage<TRequest>
    where TResponse : class, IMessage<TResponse>
{
    public override async Task InvokeAsync(ServerCall call)
    {
        var response = await handler(new ServerRequestStream<TRequest>(call, method.RequestParser), call).ConfigureAwait(false);
        await call.WriteAsync(response ?? throw new InvalidOperationException($"The handler of {method.FullName} returned no response.")).ConfigureAwait(false);
    }
}

internal sealed class DuplexStreamingHandler<TRequest, TResponse>(Method<TRequest, TResponse> method, DuplexStreamingServerMethod<TRequest, TResponse> handler) : MethodHandler
    where TRequest : class, IMessage<TRequest>
    where TResponse : class, IMessage<TResponse>
{
    public override Task InvokeAsync(ServerCall call) =>
        handler(new ServerRequestStream<TRequest>(call, method.RequestParser), new ServerResponseStream<TResponse>(call), call);
}

/// <summary>The request stream a handler reads.</summary>
internal sealed class ServerRequestStream<T>(ServerCall call, MessageParser<T> parser) : IAsyncStreamReader<T>
    where T : class, IMessage<T>
{
    private T? _current;

    public T Current => _current ?? throw new InvalidOperationException("MoveNext has not returned true.");

    public async Task<bool> MoveNext(CancellationToken cancellationToken = default)
    {
        _current = await call.ReadAsync(parser, cancellationToken).ConfigureAwait(false);
        return _current is not null;
    }
}

/// <summary>The response stream a handler writes.</summary>
internal sealed class ServerResponseStream<T>(ServerCall call) : IServerStreamWriter<T>
    where T : class, IMessage<T>
{
    public Task WriteAsync(T message)
    {
        ArgumentNullException.ThrowIfNull(message);
        return call.WriteAsync(message);
    }
}
