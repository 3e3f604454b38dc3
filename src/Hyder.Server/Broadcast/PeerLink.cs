using System.IO.Pipelines;
using System.Net;
using System.Net.Sockets;
using System.Threading.Channels;
using Hyder.Log;
using Hyder.Log.Transport;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Broadcast;

/// <summary>
/// The sending side towards one peer: connect, handshake, then write queued frames, many per
/// flush; when the connection fails, wait (doubling from the initial delay up to the maximum)
/// and connect again. A queue exists only while a connection is up, so blocks published while
/// the peer is away are not sent later: its log reader reads them from the log.
/// </summary>
internal sealed partial class PeerLink(BroadcastHub hub, IPEndPoint endPoint)
{
    private readonly ILogger _logger = hub.Logger;
    private Channel<OutboundFrame>? _queue;

    /// <summary>The peer.</summary>
    public IPEndPoint EndPoint { get; } = endPoint;

    /// <summary>The send queue of the current connection, or null while disconnected.</summary>
    public Channel<OutboundFrame>? Queue => Volatile.Read(ref _queue);

    /// <summary>Whether a connection is up.</summary>
    public bool IsConnected => Queue is not null;

    /// <summary>Runs until the hub stops.</summary>
    public async Task RunAsync()
    {
        await Task.Yield();
        var options = hub.Options;
        var stopping = hub.Stopping;
        var delay = options.ReconnectInitialDelay;
        var connectedBefore = false;
        while (!stopping.IsCancellationRequested)
        {
            try
            {
                if (await ConnectAndSendAsync(connectedBefore, stopping).ConfigureAwait(false))
                {
                    connectedBefore = true;
                    delay = options.ReconnectInitialDelay;
                }
            }
            catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
            {
                if (stopping.IsCancellationRequested)
                {
                    return;
                }

                LogConnectFailed(EndPoint, e.Message);
            }

            try
            {
                await Task.Delay(delay, stopping).ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
                return;
            }

            delay = TimeSpan.FromTicks(Math.Min(delay.Ticks * 2, options.ReconnectMaxDelay.Ticks));
        }
    }

    /// <summary>One connection's life; true when its handshake succeeded.</summary>
    private async Task<bool> ConnectAndSendAsync(bool connectedBefore, CancellationToken stopping)
    {
        var options = hub.Options;
        var socket = new Socket(EndPoint.AddressFamily, SocketType.Stream, ProtocolType.Tcp) { NoDelay = true };
        using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(stopping))
        {
            timeout.CancelAfter(options.HandshakeTimeout);
            try
            {
                await socket.ConnectAsync(EndPoint, timeout.Token).ConfigureAwait(false);
            }
            catch
            {
                socket.Dispose();
                throw;
            }
        }

        Stream stream;
        try
        {
            stream = await options.Security.ConnectAsync(socket, EndPoint, stopping).ConfigureAwait(false);
        }
        catch (ClusterTlsException e)
        {
            hub.CountHandshakeFailure(e);
            LogTlsRefused(e.Message);
            return false;
        }

        var input = PipeReader.Create(stream, new StreamPipeReaderOptions(pool: BufferPool.Segments, bufferSize: 4096, leaveOpen: true));
        var output = PipeWriter.Create(stream, new StreamPipeWriterOptions(pool: BufferPool.Segments, minimumBufferSize: 64 * 1024, leaveOpen: true));
        try
        {
            using (var timeout = CancellationTokenSource.CreateLinkedTokenSource(stopping))
            {
                timeout.CancelAfter(options.HandshakeTimeout);
                await Handshake.SendAsync(output, LogStatus.Ok, options.ClusterId, options.ServerId, timeout.Token).ConfigureAwait(false);
                var hello = await Handshake.ReceiveAsync(input, timeout.Token).ConfigureAwait(false);
                if (hello.Status != LogStatus.Ok || hello.ClusterId != options.ClusterId)
                {
                    Interlocked.Increment(ref hub.RefusedCount);
                    LogRefused(EndPoint, hello.ServerId, hello.ClusterId);
                    return false;
                }

                LogConnected(EndPoint, hello.ServerId);
            }

            Interlocked.Increment(ref hub.ConnectionCount);
            if (connectedBefore)
            {
                Interlocked.Increment(ref hub.ReconnectCount);
            }

            var queue = Channel.CreateBounded<OutboundFrame>(new BoundedChannelOptions(options.SendQueueCapacity)
            {
                FullMode = BoundedChannelFullMode.Wait, // TryWrite answers false when full: the publisher drops.
                SingleReader = true,
                SingleWriter = false,
                AllowSynchronousContinuations = false,
            });
            Volatile.Write(ref _queue, queue);
            var watch = WatchAsync(input, socket, queue, stopping);
            try
            {
                await SendLoopAsync(queue.Reader, output).ConfigureAwait(false);
            }
            finally
            {
                Volatile.Write(ref _queue, null);
                queue.Writer.TryComplete();
                Shutdown(socket);
                await watch.ConfigureAwait(false);
                while (queue.Reader.TryRead(out var frame))
                {
                    frame.Release();
                }
            }

            LogLost(EndPoint);
            return true;
        }
        finally
        {
            await input.CompleteAsync().ConfigureAwait(false);
            await output.CompleteAsync().ConfigureAwait(false);
            await stream.DisposeAsync().ConfigureAwait(false);
        }
    }

    private async Task SendLoopAsync(ChannelReader<OutboundFrame> reader, PipeWriter output)
    {
        try
        {
            // No token: the read loop on the same connection completes the queue when it ends.
            while (await reader.WaitToReadAsync().ConfigureAwait(false))
            {
                var batch = WriteQueued(reader, output);
                var flush = await output.FlushAsync().ConfigureAwait(false);
                Interlocked.Add(ref hub.SentCount, batch);
                if (flush.IsCompleted)
                {
                    return;
                }
            }
        }
        catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException or InvalidOperationException)
        {
            LogSendFailed(EndPoint, e.Message);
        }
    }

    private static int WriteQueued(ChannelReader<OutboundFrame> reader, PipeWriter output)
    {
        var count = 0;
        while (reader.TryRead(out var frame))
        {
            var span = frame.Span;
            span.CopyTo(output.GetSpan(span.Length));
            output.Advance(span.Length);
            frame.Release();
            count++;
        }

        return count;
    }

    /// <summary>
    /// Reads the connection, which the peer never writes to after the handshake: its end (the
    /// peer closed or restarted), any byte, or the hub stopping ends the connection.
    /// </summary>
    private static async Task WatchAsync(PipeReader input, Socket socket, Channel<OutboundFrame> queue, CancellationToken stopping)
    {
        try
        {
            var result = await input.ReadAsync(stopping).ConfigureAwait(false);
            input.AdvanceTo(result.Buffer.End);
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
        }
        finally
        {
            queue.Writer.TryComplete();
            Shutdown(socket);
        }
    }

    private static void Shutdown(Socket socket)
    {
        try
        {
            socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
        }
    }

    [LoggerMessage(Level = LogLevel.Information, Message = "Broadcast: sending to {EndPoint} (server '{PeerId}')")]
    private partial void LogConnected(IPEndPoint endPoint, string peerId);

    [LoggerMessage(Level = LogLevel.Information, Message = "Broadcast: connection to {EndPoint} lost; reconnecting")]
    private partial void LogLost(IPEndPoint endPoint);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Broadcast: {EndPoint} (server '{PeerId}', cluster '{ClusterId}') refused the handshake or is in another cluster")]
    private partial void LogRefused(IPEndPoint endPoint, string peerId, string clusterId);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Broadcast: {Reason}")]
    private partial void LogTlsRefused(string reason);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Broadcast: cannot reach {EndPoint}: {Reason}")]
    private partial void LogConnectFailed(IPEndPoint endPoint, string reason);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Broadcast: sending to {EndPoint} failed: {Reason}")]
    private partial void LogSendFailed(IPEndPoint endPoint, string reason);
}
