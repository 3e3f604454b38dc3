namespace Hyder.Rpc;

/// <summary>Handles a unary call.</summary>
/// <typeparam name="TRequest">The request type.</typeparam>
/// <typeparam name="TResponse">The response type.</typeparam>
/// <param name="request">The request.</param>
/// <param name="context">The call.</param>
/// <returns>The response.</returns>
public delegate Task<TResponse> UnaryServerMethod<in TRequest, TResponse>(TRequest request, ServerCallContext context);

/// <summary>Handles a server-streaming call.</summary>
/// <typeparam name="TRequest">The request type.</typeparam>
/// <typeparam name="TResponse">The response type.</typeparam>
/// <param name="request">The request.</param>
/// <param name="responseStream">Where responses go.</param>
/// <param name="context">The call.</param>
/// <returns>A task that completes when the handler is done.</returns>
public delegate Task ServerStreamingServerMethod<in TRequest, TResponse>(TRequest request, IServerStreamWriter<TResponse> responseStream, ServerCallContext context);

/// <summary>Handles a client-streaming call.</summary>
/// <typeparam name="TRequest">The request type.</typeparam>
/// <typeparam name="TResponse">The response type.</typeparam>
/// <param name="requestStream">The requests.</param>
/// <param name="context">The call.</param>
/// <returns>The response.</returns>
public delegate Task<TResponse> ClientStreamingServerMethod<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, ServerCallContext context);

/// <summary>Handles a bidirectional-streaming call.</summary>
/// <typeparam name="TRequest">The request type.</typeparam>
/// <typeparam name="TResponse">The response type.</typeparam>
/// <param name="requestStream">The requests.</param>
/// <param name="responseStream">Where responses go.</param>
/// <param name="context">The call.</param>
/// <returns>A task that completes when the handler is done.</returns>
public delegate Task DuplexStreamingServerMethod<TRequest, TResponse>(IAsyncStreamReader<TRequest> requestStream, IServerStreamWriter<TResponse> responseStream, ServerCallContext context);
