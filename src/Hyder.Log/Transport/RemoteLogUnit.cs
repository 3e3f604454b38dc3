using Hyder.Log.Units;

namespace Hyder.Log.Transport;

/// <summary>A log unit in another process, reached over TCP; each call is one frame and its answer.</summary>
internal sealed class RemoteLogUnit : ILogUnit
{
    private readonly RemoteConnection _connection;

    public RemoteLogUnit(RemoteConnection connection) => _connection = connection;

    public ValueTask<UnitReply> WriteAsync(long epoch, long address, ReadOnlyMemory<byte> block, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.Write, epoch, address, 0, block, default, cancellationToken);

    public ValueTask<UnitReply> ReadAsync(long epoch, long address, Memory<byte> destination, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.Read, epoch, address, 0, default, destination, cancellationToken);

    public ValueTask<UnitReply> FillAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.Fill, epoch, address, 0, default, default, cancellationToken);

    public ValueTask<UnitReply> TrimAsync(long epoch, long address, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.Trim, epoch, address, 0, default, default, cancellationToken);

    public ValueTask<UnitReply> PrefixTrimAsync(long epoch, long before, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.PrefixTrim, epoch, before, 0, default, default, cancellationToken);

    public ValueTask<UnitReply> SealAsync(long epoch, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.Seal, epoch, 0, 0, default, default, cancellationToken);

    public ValueTask<UnitReply> HighestAsync(long epoch, CancellationToken cancellationToken = default) =>
        _connection.Send<UnitReply>(FrameOp.Highest, epoch, 0, 0, default, default, cancellationToken);

    public override string ToString() => _connection.Endpoint;
}
