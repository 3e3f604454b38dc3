using System.Runtime.CompilerServices;
using Hyder.Log.Sequencing;

namespace Hyder.Log.Transport;

/// <summary>The sequencer in another process, reached over TCP.</summary>
internal sealed class RemoteSequencer : ISequencer
{
    private readonly RemoteConnection _connection;

    public RemoteSequencer(RemoteConnection connection) => _connection = connection;

    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    public async ValueTask<TokenReply> NextAsync(long epoch, int count, CancellationToken cancellationToken = default)
    {
        var reply = await _connection.SendAsync(FrameOp.Token, epoch, 0, count, default, default, cancellationToken).ConfigureAwait(false);
        return new TokenReply(reply.Status, reply.Epoch, reply.Value);
    }

    public async ValueTask<TokenReply> ResetAsync(long epoch, long next, CancellationToken cancellationToken = default)
    {
        var reply = await _connection.SendAsync(FrameOp.Reset, epoch, next, 0, default, default, cancellationToken).ConfigureAwait(false);
        return new TokenReply(reply.Status, reply.Epoch, reply.Value);
    }
}
