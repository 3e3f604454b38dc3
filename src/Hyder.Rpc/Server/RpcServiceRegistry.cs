using Google.Protobuf;

namespace Hyder.Rpc;

/// <summary>
/// The methods a server serves, by full name <c>/package.Service/Method</c>. Register every method
/// before the server starts; the handler signatures are those of Grpc.Core, so a service written
/// against them moves to Grpc.AspNetCore with its code unchanged.
/// </summary>
public sealed class RpcServiceRegistry
{
    private readonly Dictionary<string, MethodHandler> _handlers = new(StringComparer.Ordinal);

    /// <summary>The full names of the registered methods.</summary>
    public IEnumerable<string> MethodNames => _handlers.Keys;

    /// <summary>Registers a unary method.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method; its type must be <see cref="MethodType.Unary"/>.</param>
    /// <param name="handler">The handler.</param>
    /// <returns>This registry.</returns>
    public RpcServiceRegistry AddUnary<TRequest, TResponse>(Method<TRequest, TResponse> method, UnaryServerMethod<TRequest, TResponse> handler)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse> =>
        Add(method, MethodType.Unary, handler, () => new UnaryHandler<TRequest, TResponse>(method, handler));

    /// <summary>Registers a server-streaming method.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method; its type must be <see cref="MethodType.ServerStreaming"/>.</param>
    /// <param name="handler">The handler.</param>
    /// <returns>This registry.</returns>
    public RpcServiceRegistry AddServerStreaming<TRequest, TResponse>(Method<TRequest, TResponse> method, ServerStreamingServerMethod<TRequest, TResponse> handler)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse> =>
        Add(method, MethodType.ServerStreaming, handler, () => new ServerStreamingHandler<TRequest, TResponse>(method, handler));

    /// <summary>Registers a client-streaming method.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method; its type must be <see cref="MethodType.ClientStreaming"/>.</param>
    /// <param name="handler">The handler.</param>
    /// <returns>This registry.</returns>
    public RpcServiceRegistry AddClientStreaming<TRequest, TResponse>(Method<TRequest, TResponse> method, ClientStreamingServerMethod<TRequest, TResponse> handler)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse> =>
        Add(method, MethodType.ClientStreaming, handler, () => new ClientStreamingHandler<TRequest, TResponse>(method, handler));

    /// <summary>Registers a bidirectional-streaming method.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method; its type must be <see cref="MethodType.DuplexStreaming"/>.</param>
    /// <param name="handler">The handler.</param>
    /// <returns>This registry.</returns>
    public RpcServiceRegistry AddDuplexStreaming<TRequest, TResponse>(Method<TRequest, TResponse> method, DuplexStreamingServerMethod<TRequest, TResponse> handler)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse> =>
        Add(method, MethodType.DuplexStreaming, handler, () => new DuplexStreamingHandler<TRequest, TResponse>(method, handler));

    internal bool TryGetHandler(string path, out MethodHandler handler) => _handlers.TryGetValue(path, out handler!);

    private RpcServiceRegistry Add<TRequest, TResponse>(Method<TRequest, TResponse> method, MethodType expected, Delegate handler, Func<MethodHandler> create)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse>
    {
        ArgumentNullException.ThrowIfNull(method);
        ArgumentNullException.ThrowIfNull(handler);
        if (method.Type != expected)
        {
            throw new ArgumentException($"{method.FullName} is a {method.Type} method, not {expected}.", nameof(method));
        }

        if (!_handlers.TryAdd(method.FullName, create()))
        {
            throw new ArgumentException($"{method.FullName} is already registered.", nameof(method));
        }

        return this;
    }
}
