using Google.Protobuf;

namespace Hyder.Rpc;

/// <summary>
/// Describes one method of a service, shared by the server that registers it and the client that
/// calls it: its kind, its full name <c>/package.Service/Method</c> and the parsers of its messages.
/// </summary>
/// <typeparam name="TRequest">The request message type.</typeparam>
/// <typeparam name="TResponse">The response message type.</typeparam>
public sealed class Method<TRequest, TResponse>
    where TRequest : class, IMessage<TRequest>
    where TResponse : class, IMessage<TResponse>
{
    /// <summary>Describes a method.</summary>
    /// <param name="type">The kind of call.</param>
    /// <param name="serviceName">The service's full protobuf name, such as <c>hyder.v1.Kv</c>.</param>
    /// <param name="name">The method's name, such as <c>Get</c>.</param>
    /// <param name="requestParser">Parses requests (used by the server).</param>
    /// <param name="responseParser">Parses responses (used by the client).</param>
    public Method(MethodType type, string serviceName, string name, MessageParser<TRequest> requestParser, MessageParser<TResponse> responseParser)
    {
        ArgumentException.ThrowIfNullOrEmpty(serviceName);
        ArgumentException.ThrowIfNullOrEmpty(name);
        ArgumentNullException.ThrowIfNull(requestParser);
        ArgumentNullException.ThrowIfNull(responseParser);
        if (serviceName.Contains('/', StringComparison.Ordinal) || name.Contains('/', StringComparison.Ordinal))
        {
            throw new ArgumentException("Service and method names must not contain '/'.");
        }

        Type = type;
        ServiceName = serviceName;
        Name = name;
        FullName = $"/{serviceName}/{name}";
        RequestParser = requestParser;
        ResponseParser = responseParser;
    }

    /// <summary>The kind of call.</summary>
    public MethodType Type { get; }

    /// <summary>The service's full protobuf name.</summary>
    public string ServiceName { get; }

    /// <summary>The method's name.</summary>
    public string Name { get; }

    /// <summary>The HTTP/2 path of the method: <c>/package.Service/Method</c>.</summary>
    public string FullName { get; }

    /// <summary>Parses requests.</summary>
    public MessageParser<TRequest> RequestParser { get; }

    /// <summary>Parses responses.</summary>
    public MessageParser<TResponse> ResponseParser { get; }

    /// <inheritdoc />
    public override string ToString() => FullName;
}
