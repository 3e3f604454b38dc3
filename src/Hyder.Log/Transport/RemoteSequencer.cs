using Hyder.Log.Sequencing;

namespace Hyder.Log.Transport;

/// <summary>The sequencer in another process, reached over TCP.</summary>
internal sealed class RemoteSequencer : ISequencer
{
    private readonly RemoteConnection _connection;

    public RemoteSequencer(RemoteConnection connection) => _connection = connection;

    public ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default) =>
        _connection.Send<TokenReply>(FrameOp.Token, epoch, 0, count, default, default, cancellationToken);

    public ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default) =>
        _connection.Send<TokenReply>(FrameOp.Reset, epoch, next, 0, default, default, cancellationToken);
}
