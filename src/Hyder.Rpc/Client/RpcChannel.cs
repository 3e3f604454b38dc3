using System.Net.Security;
using System.Security.Cryptography.X509Certificates;
using Google.Protobuf;
using Hyder.Rpc.Security;

namespace Hyder.Rpc;

/// <summary>
/// A client of one gRPC server over HTTP/2 (<see cref="HttpClient"/> with
/// <see cref="HttpVersionPolicy.RequestVersionExact"/>): h2c with prior knowledge for an
/// <c>http</c> address, h2 by ALPN for <c>https</c>. Calls share its connections; it is thread-safe.
/// </summary>
public sealed class RpcChannel : IDisposable
{
    internal const string UserAgent = "hyder-rpc-dotnet/1.0";

    /// <summary>Creates a channel.</summary>
    /// <param name="address">The server, such as <c>http://127.0.0.1:50051</c>.</param>
    /// <param name="options">Settings; defaults when null.</param>
    public RpcChannel(Uri address, RpcChannelOptions? options = null)
    {
        ArgumentNullException.ThrowIfNull(address);
        options ??= new RpcChannelOptions();
        Address = address;
        MaxReceiveMessageSize = options.MaxReceiveMessageSize;
        MaxSendMessageSize = options.MaxSendMessageSize;
        Authorization = options.BearerToken is { Length: > 0 } token ? "Bearer " + token : null;
        var handler = options.HttpHandler ?? CreateHandler(options);
        Http = new HttpClient(handler, options.HttpHandler is null || options.DisposeHttpHandler)
        {
            // Streams last as long as they last; deadlines are per call.
            Timeout = Timeout.InfiniteTimeSpan,
        };
    }

    /// <summary>The server's address.</summary>
    public Uri Address { get; }

    internal HttpClient Http { get; }

    /// <summary>The authorization header's value, or null.</summary>
    internal string? Authorization { get; }

    internal int MaxReceiveMessageSize { get; }

    internal int MaxSendMessageSize { get; }

    /// <summary>Starts a unary call.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method.</param>
    /// <param name="request">The request.</param>
    /// <param name="options">Headers, deadline, cancellation.</param>
    /// <returns>The call; await it for the response.</returns>
    public AsyncUnaryCall<TResponse> UnaryCall<TRequest, TResponse>(Method<TRequest, TResponse> method, TRequest request, CallOptions options = default)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse>
    {
        ArgumentNullException.ThrowIfNull(request);
        var call = Start(method, MethodType.Unary, options, request);
        return new AsyncUnaryCall<TResponse>(call, call.ReadSingleResponseAsync());
    }

    /// <summary>Starts a server-streaming call.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method.</param>
    /// <param name="request">The request.</param>
    /// <param name="options">Headers, deadline, cancellation.</param>
    /// <returns>The call; read its response stream.</returns>
    public AsyncServerStreamingCall<TResponse> ServerStreamingCall<TRequest, TResponse>(Method<TRequest, TResponse> method, TRequest request, CallOptions options = default)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse>
    {
        ArgumentNullException.ThrowIfNull(request);
        var call = Start(method, MethodType.ServerStreaming, options, request);
        return new AsyncServerStreamingCall<TResponse>(call, call);
    }

    /// <summary>Starts a client-streaming call.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method.</param>
    /// <param name="options">Headers, deadline, cancellation.</param>
    /// <returns>The call; write and complete its request stream, then await it.</returns>
    public AsyncClientStreamingCall<TRequest, TResponse> ClientStreamingCall<TRequest, TResponse>(Method<TRequest, TResponse> method, CallOptions options = default)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse>
    {
        var call = Start(method, MethodType.ClientStreaming, options, null);
        return new AsyncClientStreamingCall<TRequest, TResponse>(call, call, call.ReadSingleResponseAsync());
    }

    /// <summary>Starts a bidirectional-streaming call.</summary>
    /// <typeparam name="TRequest">The request type.</typeparam>
    /// <typeparam name="TResponse">The response type.</typeparam>
    /// <param name="method">The method.</param>
    /// <param name="options">Headers, deadline, cancellation.</param>
    /// <returns>The call; write its request stream and read its response stream.</returns>
    public AsyncDuplexStreamingCall<TRequest, TResponse> DuplexStreamingCall<TRequest, TResponse>(Method<TRequest, TResponse> method, CallOptions options = default)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse>
    {
        var call = Start(method, MethodType.DuplexStreaming, options, null);
        return new AsyncDuplexStreamingCall<TRequest, TResponse>(call, call, call);
    }

    /// <summary>Closes the channel's connections.</summary>
    public void Dispose() => Http.Dispose();

    private static SocketsHttpHandler CreateHandler(RpcChannelOptions options)
    {
        var handler = new SocketsHttpHandler
        {
            EnableMultipleHttp2Connections = true,
            ConnectTimeout = TimeSpan.FromSeconds(10),
        };
        if (options.TrustedCertificateAuthorities is { } authorities)
        {
            handler.SslOptions.RemoteCertificateValidationCallback = (_, certificate, chain, errors) =>
                certificate is X509Certificate2 server
                && (errors & ~SslPolicyErrors.RemoteCertificateChainErrors) == SslPolicyErrors.None // the name must match
                && RpcTls.IsTrusted(server, chain, authorities, RpcTls.ServerAuthOid);
        }

        if (options.ClientCertificate is { } client)
        {
            handler.SslOptions.ClientCertificates = [client];
            handler.SslOptions.LocalCertificateSelectionCallback = (_, _, _, _, _) => client;
        }

        return handler;
    }

    private ClientCall<TRequest, TResponse> Start<TRequest, TResponse>(Method<TRequest, TResponse> method, MethodType expected, CallOptions options, TRequest? request)
        where TRequest : class, IMessage<TRequest>
        where TResponse : class, IMessage<TResponse>
    {
        ArgumentNullException.ThrowIfNull(method);
        if (method.Type != expected)
        {
            throw new ArgumentException($"{method.FullName} is a {method.Type} method, not {expected}.", nameof(method));
        }

        return new ClientCall<TRequest, TResponse>(this, method, options, request);
    }
}
