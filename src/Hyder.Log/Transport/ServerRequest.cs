using System.Buffers;
using System.Collections.Concurrent;
using System.Runtime.CompilerServices;
using System.Text;
using Hyder.Log.Layout;
using Hyder.Log.Sequencing;
using Hyder.Log.Units;
using Microsoft.Extensions.Logging;

namespace Hyder.Log.Transport;

/// <summary>
/// One request being served. Pooled, with its continuations cached, so a steady stream of
/// writes, reads and token requests allocates nothing: the payload goes into a pooled buffer and
/// the unit's or sequencer's ValueTask is awaited through a cached delegate.
/// </summary>
internal sealed partial class ServerRequest
{
    private const int PoolLimit = 4096;
    private static readonly ConcurrentQueue<ServerRequest> s_pool = new();

    private readonly Action _onUnitReply;
    private readonly Action _onTokenReply;
    private ServerConnection? _connection;
    private FrameHeader _header;
    private byte[]? _buffer;
    private ConfiguredValueTaskAwaitable<UnitReply>.ConfiguredValueTaskAwaiter _unitAwaiter;
    private ConfiguredValueTaskAwaitable<TokenReply>.ConfiguredValueTaskAwaiter _tokenAwaiter;

    private ServerRequest()
    {
        _onUnitReply = OnUnitReply;
        _onTokenReply = OnTokenReply;
    }

    public static ServerRequest Rent() => s_pool.TryDequeue(out var request) ? request : new ServerRequest();

    public void Start(ServerConnection connection, in FrameHeader header, in ReadOnlySequence<byte> payload)
    {
        _connection = connection;
        _header = header;
        var server = connection.Server;
        server.CountRequest(header.Op);
        try
        {
            switch (header.Op)
            {
                case FrameOp.Ping:
                    Finish(LogStatus.Ok, 0, 0);
                    return;
                case FrameOp.Token or FrameOp.Reset:
                    if (server.Sequencer is null)
                    {
                        Finish(LogStatus.NotServing, 0, 0);
                        return;
                    }

                    AwaitToken(header.Op == FrameOp.Token
                        ? server.Sequencer.NextAsync(header.Epoch, header.Arg)
                        : server.Sequencer.ResetAsync(header.Epoch, header.Address));
                    return;
                case FrameOp.GetProjection or FrameOp.InstallProjection:
                    var json = header.Op == FrameOp.InstallProjection ? Encoding.UTF8.GetString(payload) : null;
                    _ = ServeProjectionAsync(server.Projections, json);
                    return;
            }

            if (server.Unit is not { } unit)
            {
                Finish(LogStatus.NotServing, 0, 0);
                return;
            }

            AwaitUnit(header.Op switch
            {
                FrameOp.Write => unit.WriteAsync(header.Epoch, header.Address, CopyPayload(payload)),
                FrameOp.Read => unit.ReadAsync(header.Epoch, header.Address, RentBuffer(unit.BlockSize)),
                FrameOp.Fill => unit.FillAsync(header.Epoch, header.Address),
                FrameOp.Trim => unit.TrimAsync(header.Epoch, header.Address),
                FrameOp.PrefixTrim => unit.PrefixTrimAsync(header.Epoch, header.Address),
                FrameOp.Seal => unit.SealAsync(header.Epoch),
                _ => unit.HighestAsync(header.Epoch),
            });
        }
        catch (Exception e) when (e is IOException or InvalidOperationException or SharedLogException)
        {
            Fail(e);
        }
    }

    private ReadOnlyMemory<byte> CopyPayload(in ReadOnlySequence<byte> payload)
    {
        var buffer = RentBuffer((int)payload.Length);
        payload.CopyTo(buffer);
        return buffer.AsMemory(0, (int)payload.Length);
    }

    private byte[] RentBuffer(int length) => _buffer = BufferPool.Arrays.Rent(Math.Max(length, 1));

    private void AwaitUnit(ValueTask<UnitReply> pending)
    {
        if (pending.IsCompletedSuccessfully)
        {
            FinishUnit(pending.Result);
            return;
        }

        _unitAwaiter = pending.ConfigureAwait(false).GetAwaiter();
        _unitAwaiter.UnsafeOnCompleted(_onUnitReply);
    }

    private void OnUnitReply()
    {
        var awaiter = _unitAwaiter;
        _unitAwaiter = default;
        try
        {
            FinishUnit(awaiter.GetResult());
        }
        catch (Exception e) when (e is IOException or InvalidOperationException or SharedLogException or ObjectDisposedException)
        {
            Fail(e);
        }
    }

    private void FinishUnit(UnitReply reply)
    {
        if (_header.Op == FrameOp.Read && reply.Status == LogStatus.Ok)
        {
            // The read buffer travels with the response and goes back to the pool once sent.
            var buffer = _buffer;
            _buffer = null;
            Finish(reply.Status, reply.Value, (int)reply.Value, buffer, pooled: true);
            return;
        }

        Finish(reply.Status, reply.Value, 0);
    }

    private void AwaitToken(ValueTask<TokenReply> pending)
    {
        if (pending.IsCompletedSuccessfully)
        {
            FinishToken(pending.Result);
            return;
        }

        _tokenAwaiter = pending.ConfigureAwait(false).GetAwaiter();
        _tokenAwaiter.UnsafeOnCompleted(_onTokenReply);
    }

    private void OnTokenReply()
    {
        var awaiter = _tokenAwaiter;
        _tokenAwaiter = default;
        try
        {
            FinishToken(awaiter.GetResult());
        }
        catch (Exception e) when (e is IOException or InvalidOperationException or SharedLogException)
        {
            Fail(e);
        }
    }

    private void FinishToken(TokenReply reply)
    {
        _header.Epoch = reply.Epoch;
        Finish(reply.Status, reply.Address, 0);
    }

    private async Task ServeProjectionAsync(IProjectionStore? store, string? json)
    {
        try
        {
            if (store is null)
            {
                Finish(LogStatus.NotServing, 0, 0);
            }
            else if (json is null)
            {
                var latest = await store.GetLatestAsync().ConfigureAwait(false);
                var bytes = latest is null ? null : Encoding.UTF8.GetBytes(latest.ToJson());
                Finish(latest is null ? LogStatus.Unwritten : LogStatus.Ok, latest?.Epoch ?? 0, bytes?.Length ?? 0, bytes, pooled: false);
            }
            else
            {
                var installed = await store.TryInstallAsync(Projection.FromJson(json)).ConfigureAwait(false);
                Finish(installed ? LogStatus.Ok : LogStatus.Conflict, 0, 0);
            }
        }
        catch (Exception e) when (e is IOException or ArgumentException or System.Text.Json.JsonException or SharedLogException or HttpRequestException)
        {
            Fail(e);
        }
    }

    private void Fail(Exception e)
    {
        LogFailed(_connection!.Server.Logger, _header.Op, _header.Address, e);
        Finish(LogStatus.Failed, 0, 0);
    }

    private void Finish(LogStatus status, long value, int payloadLength, byte[]? payload = null, bool pooled = false)
    {
        var header = _header;
        header.Status = status;
        header.Address = value;
        header.PayloadLength = payloadLength;
        var connection = _connection!;
        if (_buffer is not null)
        {
            BufferPool.Arrays.Return(_buffer);
            _buffer = null;
        }

        _connection = null;
        _header = default;
        if (s_pool.Count < PoolLimit)
        {
            s_pool.Enqueue(this);
        }

        connection.Complete(new Response(header, payload, pooled));
    }

    [LoggerMessage(Level = LogLevel.Error, Message = "Request {Op} at address {Address} failed")]
    private static partial void LogFailed(ILogger logger, FrameOp op, long address, Exception exception);
}
