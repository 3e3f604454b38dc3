namespace Hyder.Server.Grpc;

/// <summary>
/// Where a streaming method of <see cref="HyderService"/> writes its responses. Any host adapts
/// its own stream writer to it (Hyder.Rpc's in <see cref="HyderServiceBinding"/>; Grpc.AspNetCore's
/// <c>IServerStreamWriter</c> the same way), so the service logic does not depend on the host.
/// </summary>
/// <typeparam name="T">The response message type.</typeparam>
public interface IResponseStream<in T>
{
    /// <summary>Sends one response; at most one write at a time.</summary>
    /// <param name="message">The response.</param>
    /// <returns>A task that completes when the message is handed to the transport.</returns>
    Task WriteAsync(T message);
}
