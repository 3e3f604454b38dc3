using System.Runtime.CompilerServices;
using Hyder.Log.Units;

namespace Hyder.Log.Transport;

/// <summary>A log unit in another process, reached over TCP.</summary>
internal sealed class RemoteLogUnit : ILogUnit
{
    private readonly RemoteConnection _connection;

    public RemoteLogUnit(RemoteConnection connection) => _connection = connection;

    public ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.Write, epoch, address, block, default, cancellationToken);

    public ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.Read, epoch, address, default, destination, cancellationToken);

    public ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.Fill, epoch, address, default, default, cancellationToken);

    public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.Trim, epoch, address, default, default, cancellationToken);

    public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.PrefixTrim, epoch, before, default, default, cancellationToken);

    public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.Seal, epoch, 0, default, default, cancellationToken);

    public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default) =>
        CallAsync(FrameOp.Highest, epoch, 0, default, default, cancellationToken);

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private async ValueTask<UnitReply> CallAsync(
        FrameOp op, long epoch, long address, ReadOnlyMemory<byte> payload, Memory<byte> destination, CancellationToken cancellationToken)
    {
        var reply = await _connection.SendAsync(op, epoch, address, 0, payload, destination, cancellationToken).ConfigureAwait(false);
        return new UnitReply(reply.Status, reply.Value);
    }

    public override string ToString() => _connection.Endpoint;
}
