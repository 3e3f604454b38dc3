namespace Hyder.Rpc;

/// <summary>The four kinds of gRPC call.</summary>
public enum MethodType
{
    /// <summary>One request, one response.</summary>
    Unary,

    /// <summary>A stream of requests, one response.</summary>
    ClientStreaming,

    /// <summary>One request, a stream of responses.</summary>
    ServerStreaming,

    /// <summary>A stream of requests and a stream of responses, independent of each other.</summary>
    DuplexStreaming,
}
