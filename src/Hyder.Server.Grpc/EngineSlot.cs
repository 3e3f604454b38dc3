using Grpc.Core;
using Hyder.Server.Engine;

namespace Hyder.Server.Grpc;

/// <summary>
/// Where <see cref="HyderService"/> finds its engine: empty while the host's transaction server
/// catches up with the log (the listener is already open for health checks), set once by
/// <see cref="HyderGrpcServer.Serve"/>.
/// </summary>
/// <param name="engine">The engine, or null until the server serves.</param>
internal sealed class EngineSlot(ITransactionEngine? engine)
{
    /// <summary>The engine; written once, from null.</summary>
    public ITransactionEngine? Engine = engine;

    /// <summary>The status of a Hyder call that arrives before the engine.</summary>
    public static RpcException CatchingUp() => new(new Status(
        StatusCode.Unavailable,
        "The server is catching up with the log and serves no transactions yet; grpc.health.v1.Health reports SERVING once it has. Retry."));
}
