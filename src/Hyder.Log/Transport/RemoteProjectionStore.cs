using System.Text;
using Hyder.Log.Layout;

namespace Hyder.Log.Transport;

/// <summary>A projection store served by a log host (<c>--role projection</c>), reached over TCP.</summary>
public sealed class RemoteProjectionStore : IProjectionStore, IAsyncDisposable
{
    private readonly RemoteConnection _connection;

    /// <summary>
    /// Talks to the projection server at <paramref name="endpoint"/> ("address:port"), over mutual
    /// TLS when <paramref name="security"/> says so (null: plaintext).
    /// </summary>
    public RemoteProjectionStore(string endpoint, TransportSecurity? security = null) =>
        _connection = new RemoteConnection(endpoint, security ?? TransportSecurity.Plaintext, LogServer.MaxControlPayload, TimeSpan.FromSeconds(5), TimeSpan.FromSeconds(10));

    /// <inheritdoc />
    public async Task<Projection?> GetLatestAsync(CancellationToken cancellationToken = default)
    {
        var buffer = BufferPool.Arrays.Rent(LogServer.MaxControlPayload);
        try
        {
            var reply = await _connection.Send<FrameReply>(FrameOp.GetProjection, 0, 0, 0, default, buffer, cancellationToken).ConfigureAwait(false);
            return reply.Status switch
            {
                LogStatus.Ok => Projection.FromJson(Encoding.UTF8.GetString(buffer, 0, reply.PayloadLength)),
                LogStatus.Unwritten => null,
                _ => throw new SharedLogException(reply.Status, -1, $"The projection server {_connection.Endpoint} answered {reply.Status}."),
            };
        }
        finally
        {
            BufferPool.Arrays.Return(buffer);
        }
    }

    /// <inheritdoc />
    public async Task<bool> TryInstallAsync(Projection projection, CancellationToken cancellationToken = default)
    {
        projection.Validate();
        var json = Encoding.UTF8.GetBytes(projection.ToJson());
        var reply = await _connection.Send<FrameReply>(FrameOp.InstallProjection, projection.Epoch, 0, 0, json, default, cancellationToken).ConfigureAwait(false);
        return reply.Status switch
        {
            LogStatus.Ok => true,
            LogStatus.Conflict => false,
            _ => throw new SharedLogException(reply.Status, -1, $"The projection server {_connection.Endpoint} answered {reply.Status}."),
        };
    }

    /// <inheritdoc />
    public ValueTask DisposeAsync() => _connection.DisposeAsync();
}
