using System.IO.Pipelines;
using System.Net.Sockets;
using System.Threading.Channels;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Transport;

/// <summary>
/// One client connection: a read loop that parses frames and starts requests (up to a bound in
/// flight, so a fast client cannot queue without limit), and a write loop that sends responses
/// as they complete, many per flush.
/// </summary>
internal sealed partial class ServerConnection : IDisposable
{
    private readonly LogServer _server;
    private readonly Socket _socket;
    private readonly Channel<Response> _responses = Channel.CreateUnbounded<Response>(
        new UnboundedChannelOptions { SingleReader = true, AllowSynchronousContinuations = false });

    private readonly SemaphoreSlim _inFlight;
    private readonly ILogger _logger;

    public ServerConnection(LogServer server, Socket socket)
    {
        _server = server;
        _socket = socket;
        _logger = server.Logger;
        _inFlight = new SemaphoreSlim(server.MaxInFlightPerConnection, server.MaxInFlightPerConnection);
        Remote = socket.RemoteEndPoint?.ToString() ?? "?";
    }

    public LogServer Server => _server;

    public string Remote { get; }

    public async Task RunAsync(CancellationToken stopping)
    {
        Stream stream;
        try
        {
            stream = await _server.Security.AcceptAsync(_socket, Remote, stopping).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
            if (e is ClusterTlsException tls)
            {
                // Logged before it is counted: whoever sees the count sees the reason too.
                LogRefused(e.Message);

                // A client that only ran out of time (an overloaded host) was not refused.
                if (!tls.TimedOut)
                {
                    _server.CountRefused();
                }
            }

            _socket.Dispose();
            Dispose();
            return;
        }

        await using var owned = stream.ConfigureAwait(false);
        var input = PipeReader.Create(stream, new StreamPipeReaderOptions(pool: BufferPool.Segments, bufferSize: 64 * 1024, minimumReadSize: 16 * 1024, leaveOpen: true));
        var output = PipeWriter.Create(stream, new StreamPipeWriterOptions(pool: BufferPool.Segments, minimumBufferSize: 64 * 1024, leaveOpen: true));
        var writeLoop = WriteLoopAsync(output);
        try
        {
            await ReadLoopAsync(input, stopping).ConfigureAwait(false);
        }
        catch (Exception e) when (e is IOException or SocketException or OperationCanceledException or ObjectDisposedException)
        {
            LogClosed(Remote, e.Message);
        }
        finally
        {
            // Requests still in flight finish and release their buffers before the writer stops.
            for (var i = 0; i < _server.MaxInFlightPerConnection; i++)
            {
                await _inFlight.WaitAsync(CancellationToken.None).ConfigureAwait(false);
            }

            _responses.Writer.TryComplete();
            await writeLoop.ConfigureAwait(false);
            await input.CompleteAsync().ConfigureAwait(false);
            await output.CompleteAsync().ConfigureAwait(false);
            _socket.Dispose();
            Dispose();
        }
    }

    public void Dispose() => _inFlight.Dispose();

    public void Abort()
    {
        try
        {
            _socket.Shutdown(SocketShutdown.Both);
        }
        catch (Exception e) when (e is SocketException or ObjectDisposedException)
        {
        }
    }

    private async Task ReadLoopAsync(PipeReader input, CancellationToken stopping)
    {
        while (true)
        {
            var result = await input.ReadAsync(stopping).ConfigureAwait(false);
            var buffer = result.Buffer;
            try
            {
                while (true)
                {
                    var parse = Frame.TryRead(ref buffer, _server.MaxPayload, out var header, out var payload, out var error);
                    if (parse == FrameParse.Incomplete)
                    {
                        break;
                    }

                    error ??= Validate(header);
                    if (error is not null)
                    {
                        LogMalformed(Remote, error);
                        return;
                    }

                    await _inFlight.WaitAsync(stopping).ConfigureAwait(false);
                    ServerRequest.Rent().Start(this, header, payload);
                }

                if (result.IsCompleted)
                {
                    if (buffer.Length > 0)
                    {
                        LogMalformed(Remote, $"connection closed inside a frame ({buffer.Length} bytes left)");
                    }

                    return;
                }
            }
            finally
            {
                input.AdvanceTo(buffer.Start, buffer.End);
            }
        }
    }

    /// <summary>Why a request's header breaks the protocol (the connection is then closed), or null.</summary>
    internal static string? Validate(in FrameHeader header)
    {
        if (!Frame.IsKnown(header.Op))
        {
            return $"unknown op {(byte)header.Op}";
        }

        if (header.Status != LogStatus.Ok)
        {
            return "a request carries a status";
        }

        if (header.PayloadLength > 0 && !Frame.TakesPayload(header.Op))
        {
            return $"op {header.Op} carries a payload of {header.PayloadLength} bytes";
        }

        return null;
    }

    /// <summary>Queues a response; <see cref="Response.Payload"/> goes back to the pool once sent.</summary>
    public void Complete(in Response response)
    {
        if (!_responses.Writer.TryWrite(response))
        {
            response.ReturnPayload();
        }

        _inFlight.Release();
    }

    private async Task WriteLoopAsync(PipeWriter output)
    {
        var reader = _responses.Reader;
        var broken = false;
        while (await reader.WaitToReadAsync().ConfigureAwait(false))
        {
            while (reader.TryRead(out var response))
            {
                if (!broken)
                {
                    var span = output.GetSpan(Frame.HeaderSize + response.Header.PayloadLength);
                    Frame.Write(span, response.Header);
                    response.PayloadSpan.CopyTo(span[Frame.HeaderSize..]);
                    output.Advance(Frame.HeaderSize + response.Header.PayloadLength);
                }

                response.ReturnPayload();
            }

            if (broken)
            {
                continue;
            }

            try
            {
                var flush = await output.FlushAsync().ConfigureAwait(false);
                broken = flush.IsCompleted;
            }
            catch (Exception e) when (e is IOException or SocketException or ObjectDisposedException)
            {
                broken = true;
                Abort();
            }
        }
    }

    [LoggerMessage(Level = LogLevel.Warning, Message = "Refused a connection: {Reason}")]
    private partial void LogRefused(string reason);

    [LoggerMessage(Level = LogLevel.Warning, Message = "Closing connection from {Remote}: {Reason}")]
    private partial void LogMalformed(string remote, string reason);

    [LoggerMessage(Level = LogLevel.Debug, Message = "Connection from {Remote} closed: {Reason}")]
    private partial void LogClosed(string remote, string reason);
}

/// <summary>A response waiting to be written; the payload is pooled unless <see cref="Pooled"/> is false.</summary>
internal readonly struct Response
{
    public Response(in FrameHeader header, byte[]? payload, bool pooled)
    {
        Header = header;
        Payload = payload;
        Pooled = pooled;
    }

    public FrameHeader Header { get; }

    public byte[]? Payload { get; }

    public bool Pooled { get; }

    public ReadOnlySpan<byte> PayloadSpan => Payload is null ? [] : Payload.AsSpan(0, Header.PayloadLength);

    public void ReturnPayload()
    {
        if (Pooled && Payload is not null)
        {
            BufferPool.Arrays.Return(Payload);
        }
    }
}
