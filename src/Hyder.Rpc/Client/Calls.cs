using System.Runtime.CompilerServices;

namespace Hyder.Rpc;

/// <summary>
/// What every client call offers besides its messages: the response headers, and once the call is
/// over, its status and trailers. Disposing a call that is not over cancels it.
/// </summary>
public abstract class RpcCall : IDisposable
{
    private readonly IClientCallState _state;

    private protected RpcCall(IClientCallState state) => _state = state;

    /// <summary>The response headers' custom metadata (for a Trailers-Only response, its trailers).</summary>
    public Task<Metadata> ResponseHeadersAsync => _state.ResponseHeadersAsync;

    /// <summary>The call's status; throws <see cref="InvalidOperationException"/> before the call is over.</summary>
    /// <returns>The status.</returns>
    public Status GetStatus() => _state.GetStatus();

    /// <summary>The call's trailers; throws <see cref="InvalidOperationException"/> before the call is over.</summary>
    /// <returns>The custom trailers.</returns>
    public Metadata GetTrailers() => _state.GetTrailers();

    /// <summary>Cancels the call if it is not over, and releases it.</summary>
    public void Dispose()
    {
        _state.Dispose();
        GC.SuppressFinalize(this);
    }
}

/// <summary>A unary call: await it (or <see cref="ResponseAsync"/>) for the response.</summary>
/// <typeparam name="TResponse">The response type.</typeparam>
public sealed class AsyncUnaryCall<TResponse> : RpcCall
{
    internal AsyncUnaryCall(IClientCallState state, Task<TResponse> response)
        : base(state) => ResponseAsync = response;

    /// <summary>The response; faults with <see cref="RpcException"/> when the call fails.</summary>
    public Task<TResponse> ResponseAsync { get; }

    /// <summary>Awaits the response.</summary>
    /// <returns>The awaiter of <see cref="ResponseAsync"/>.</returns>
    public TaskAwaiter<TResponse> GetAwaiter() => ResponseAsync.GetAwaiter();
}

/// <summary>A server-streaming call: read <see cref="ResponseStream"/> to its end.</summary>
/// <typeparam name="TResponse">The response type.</typeparam>
public sealed class AsyncServerStreamingCall<TResponse> : RpcCall
{
    internal AsyncServerStreamingCall(IClientCallState state, IAsyncStreamReader<TResponse> responses)
        : base(state) => ResponseStream = responses;

    /// <summary>The responses; the reader throws <see cref="RpcException"/> when the call fails.</summary>
    public IAsyncStreamReader<TResponse> ResponseStream { get; }
}

/// <summary>A client-streaming call: write <see cref="RequestStream"/>, complete it, then await the response.</summary>
/// <typeparam name="TRequest">The request type.</typeparam>
/// <typeparam name="TResponse">The response type.</typeparam>
public sealed class AsyncClientStreamingCall<TRequest, TResponse> : RpcCall
{
    internal AsyncClientStreamingCall(IClientCallState state, IClientStreamWriter<TRequest> requests, Task<TResponse> response)
        : base(state)
    {
        RequestStream = requests;
        ResponseAsync = response;
    }

    /// <summary>The requests; <see cref="IClientStreamWriter{T}.CompleteAsync"/> ends them.</summary>
    public IClientStreamWriter<TRequest> RequestStream { get; }

    /// <summary>The response; faults with <see cref="RpcException"/> when the call fails.</summary>
    public Task<TResponse> ResponseAsync { get; }

    /// <summary>Awaits the response.</summary>
    /// <returns>The awaiter of <see cref="ResponseAsync"/>.</returns>
    public TaskAwaiter<TResponse> GetAwaiter() => ResponseAsync.GetAwaiter();
}

/// <summary>A bidirectional-streaming call: write requests and read responses independently.</summary>
/// <typeparam name="TRequest">The request type.</typeparam>
/// <typeparam name="TResponse">The response type.</typeparam>
public sealed class AsyncDuplexStreamingCall<TRequest, TResponse> : RpcCall
{
    internal AsyncDuplexStreamingCall(IClientCallState state, IClientStreamWriter<TRequest> requests, IAsyncStreamReader<TResponse> responses)
        : base(state)
    {
        RequestStream = requests;
        ResponseStream = responses;
    }

    /// <summary>The requests; <see cref="IClientStreamWriter{T}.CompleteAsync"/> ends them.</summary>
    public IClientStreamWriter<TRequest> RequestStream { get; }

    /// <summary>The responses; the reader throws <see cref="RpcException"/> when the call fails.</summary>
    public IAsyncStreamReader<TResponse> ResponseStream { get; }
}
