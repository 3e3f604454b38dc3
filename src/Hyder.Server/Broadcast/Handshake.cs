using System.IO.Pipelines;
using Hyder.Log;
using Hyder.Log.Transport;

namespace Hyder.Server.Broadcast;

/// <summary>
/// The hello exchange on a new connection: the connecting side sends its cluster and server id,
/// the accepting side answers with its own (status <see cref="LogStatus.Ok"/>) or refuses
/// (<see cref="LogStatus.Conflict"/>) and closes. Blocks flow only from the connecting side.
/// </summary>
internal static class Handshake
{
    /// <summary>Sends a hello.</summary>
    public static async ValueTask SendAsync(PipeWriter output, LogStatus status, string clusterId, string serverId, CancellationToken cancellationToken)
    {
        var length = BroadcastFrames.WriteHello(output.GetSpan(Frame.HeaderSize + BroadcastFrames.MaxHelloPayload), status, clusterId, serverId);
        output.Advance(length);
        await output.FlushAsync(cancellationToken).ConfigureAwait(false);
    }

    /// <summary>Reads the peer's hello; a malformed one or a closed connection throws <see cref="BroadcastProtocolException"/>.</summary>
    public static async ValueTask<Hello> ReceiveAsync(PipeReader input, CancellationToken cancellationToken)
    {
        while (true)
        {
            var result = await input.ReadAsync(cancellationToken).ConfigureAwait(false);
            var buffer = result.Buffer;
            var parse = Frame.TryRead(ref buffer, BroadcastFrames.MaxHelloPayload, out var header, out var payload, out var error);
            if (parse == FrameParse.Frame)
            {
                error = BroadcastFrames.ReadHello(header, payload, out var clusterId, out var serverId);
                input.AdvanceTo(buffer.Start);
                return error is null
                    ? new Hello(header.Status, clusterId, serverId)
                    : throw new BroadcastProtocolException(error);
            }

            if (parse == FrameParse.Malformed)
            {
                input.AdvanceTo(result.Buffer.Start);
                throw new BroadcastProtocolException(error!);
            }

            input.AdvanceTo(buffer.Start, buffer.End);
            if (result.IsCompleted)
            {
                throw new BroadcastProtocolException("the connection closed during the handshake");
            }
        }
    }

    /// <summary>A received hello.</summary>
    internal readonly record struct Hello(LogStatus Status, string ClusterId, string ServerId);
}

/// <summary>A peer broke the broadcast protocol; the connection is closed.</summary>
internal sealed class BroadcastProtocolException(string message) : IOException(message);
