using System.IO.Pipelines;
using System.Net.Sockets;
using Hyder.Log;
using Hyder.Log.Transport;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Broadcast;

/// <summary>The receiving side: accepting peers, the handshake, and the read loop that fills the cache.</summary>
public sealed partial class BroadcastHub
{
    private async Task AcceptLoopAsync(Socket listener)
    {
        var stopping = Stopping;
        while (!stopping.IsCancellationRequested)
        {
            Socket socket;
            try
            {
                socket = await listener.AcceptAsync(stopping).ConfigureAwait(false);
            }
            catch (Exception e) when (e is OperationCanceledException or ObjectDisposedException or SocketException)
            {
                if (stopping.IsCancellationRequested)
                {
                    return;
                }

                // A failed accept (the peer reset before it was accepted) leaves the listener usable.
                continue;
            }

            socket.NoDelay = true;
            Track(ReceiveAsync(socket));
        }
    }

    /// <summary>One peer's inbound connection: handshake, then blocks until it closes or misbehaves.</summary>
    private async Task ReceiveAsync(Socket socket)
    {
        await Task.Yield();
        var remote = socket.RemoteEndPoint?.ToString() ?? "?";
        var stopping = Stopping;
        Stream stream;
        try
        {
            stream = await _options.Security.AcceptAsync(socket, remote, stopping).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
            if (e is ClusterTlsException tls)
            {
                CountHandshakeFailure(tls);
                LogRefusedTls(e.Message);
            }

            socket.Dispose();
            return;
        }

        var input = PipeReader.Create(stream, new StreamPipeReaderOptions(pool: BufferPool.Segments, bufferSize: 64 * 1024, minimumReadSize: 16 * 1024, leaveOpen: true));
        var output = PipeWriter.Create(stream, new StreamPipeWriterOptions(pool: BufferPool.Segments, minimumBufferSize: 4096, leaveOpen: true));
        try
        {
            if (!await AcceptHandshakeAsync(input, output, remote, stopping).ConfigureAwait(false))
            {
                return;
            }

            await ReadBlocksAsync(input, remote, stopping).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
            if (e is BroadcastProtocolException)
            {
                Interlocked.Increment(ref CorruptCount);
                LogCorrupt(remote, e.Message);
            }
            else
            {
                LogInboundClosed(remote, e.Message);
            }
        }
        finally
        {
            await input.CompleteAsync().ConfigureAwait(false);
            await output.CompleteAsync().ConfigureAwait(false);
            await stream.DisposeAsync().ConfigureAwait(false);
        }
    }

    private async Task<bool> AcceptHandshakeAsync(PipeReader input, PipeWriter output, string remote, CancellationToken stopping)
    {
        using var timeout = CancellationTokenSource.CreateLinkedTokenSource(stopping);
        timeout.CancelAfter(_options.HandshakeTimeout);
        var hello = await Handshake.ReceiveAsync(input, timeout.Token).ConfigureAwait(false);
        var refusal = hello.Status != LogStatus.Ok ? $"hello with status {hello.Status}"
            : hello.ClusterId != _options.ClusterId ? $"cluster '{hello.ClusterId}' is not '{_options.ClusterId}'"
            : hello.ServerId == _options.ServerId ? $"server id '{hello.ServerId}' is this server's own"
            : null;
        await Handshake.SendAsync(output, refusal is null ? LogStatus.Ok : LogStatus.Conflict, _options.ClusterId, _options.ServerId, timeout.Token)
            .ConfigureAwait(false);
        if (refusal is not null)
        {
            Interlocked.Increment(ref RefusedCount);
            LogRefusedInbound(remote, hello.ServerId, refusal);
            return false;
        }

        LogInboundAccepted(remote, hello.ServerId);
        return true;
    }

    /// <summary>
    /// Caches each block that passes its checks. The first malformed or mismatching frame ends the
    /// connection (nothing from that frame or after it is used); blocks before it were verified.
    /// </summary>
    private async Task ReadBlocksAsync(PipeReader input, string remote, CancellationToken stopping)
    {
        var maxPayload = _options.MaxBlockSize;
        while (true)
        {
            var result = await input.ReadAsync(stopping).ConfigureAwait(false);
            var buffer = result.Buffer;
            try
            {
                while (true)
                {
                    var parse = Frame.TryRead(ref buffer, maxPayload, out var header, out var payload, out var error);
                    if (parse == FrameParse.Incomplete)
                    {
                        break;
                    }

                    error ??= BroadcastFrames.ValidateBlock(header, payload);
                    if (error is not null)
                    {
                        throw new BroadcastProtocolException(error);
                    }

                    Deliver(header.Address, payload);
                }

                if (result.IsCompleted)
                {
                    LogInboundClosed(remote, buffer.IsEmpty ? "closed by the peer" : $"closed inside a frame ({buffer.Length} bytes dropped)");
                    return;
                }
            }
            finally
            {
                input.AdvanceTo(buffer.Start, buffer.End);
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Broadcast: refused a connection: {Reason}")]
    private partial void LogRefusedTls(string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Broadcast: closing connection from {Remote}: {Reason}")]
    private partial void LogCorrupt(string remote, string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Broadcast: refused {Remote} (server '{PeerId}'): {Reason}")]
    private partial void LogRefusedInbound(string remote, string peerId, string reason);

    [LoggerMessage(Level = LogLevel.Information, Message = "Broadcast: receiving from {Remote} (server '{PeerId}')")]
    private partial void LogInboundAccepted(string remote, string peerId);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Broadcast: connection from {Remote} closed: {Reason}")]
    private partial void LogInboundClosed(string remote, string reason);
}
