using Grpc.Core;
using Hyder.Server.Engine;
using V1 = Hyder.Api.V1;

namespace Hyder.Server.Grpc;

public sealed partial class HyderService
{
    /// <summary>
    /// Streams a read-only range scan in batches: at most <c>batch_size</c> rows (default
    /// <see cref="DefaultScanBatchRows"/>) and about half of <see cref="EngineLimits.MaxMessageBytes"/>
    /// per message, so no response exceeds the message limit.
    /// </summary>
    /// <param name="request">Bounds, limit and batch size.</param>
    /// <param name="responseStream">Where the batches go.</param>
    /// <param name="context">The call.</param>
    /// <returns>A task that completes when the last batch is written.</returns>
    public override async Task Scan(V1.ScanRequest request, IServerStreamWriter<V1.ScanResponse> responseStream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(responseStream);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        var low = Messages.Bound(request.Low, _limits, "low");
        var high = Messages.Bound(request.High, _limits, "high");
        var limit = Messages.Limit(request.Limit, int.MaxValue, "limit");
        var batchRows = Messages.Limit(request.BatchSize, _limits.MaxScanRows, "batch_size");
        if (batchRows == 0)
        {
            batchRows = DefaultScanBatchRows;
        }

        await MeldedAtLeastAsync(request.MinOrdinal, cancellationToken).ConfigureAwait(false);
        var batchBytes = Math.Max(1, _limits.MaxMessageBytes / 2);
        var batch = new V1.ScanResponse();
        var bytes = 0;
        await foreach (var row in _engine.ScanAsync(low, high, limit, cancellationToken).ConfigureAwait(false))
        {
            var size = row.Key.Length + row.Value.Length + 16;
            if (batch.Rows.Count > 0 && (batch.Rows.Count >= batchRows || bytes + size > batchBytes))
            {
                await responseStream.WriteAsync(batch).ConfigureAwait(false);
                batch = new V1.ScanResponse();
                bytes = 0;
            }

            batch.Rows.Add(Messages.ToRow(row));
            bytes += size;
        }

        if (batch.Rows.Count > 0)
        {
            await responseStream.WriteAsync(batch).ConfigureAwait(false);
        }
    }

    /// <summary>How long a transaction's call waits, after its outcome, for the client to end its request stream.</summary>
    private static readonly TimeSpan s_requestEndWait = TimeSpan.FromSeconds(2);

    /// <summary>
    /// After the outcome: waits, briefly, for the client to end its request stream (it does so
    /// when it reads the outcome). A call whose handler returns while the request stream is still
    /// open is reset by Kestrel, and the resets wait in the connection's drain queue until the
    /// client ends or resets the stream; at 64 transactions in flight on a busy machine that queue
    /// passed Kestrel's limit (twice the streams per connection), and the server then refused new
    /// streams with ENHANCE_YOUR_CALM. A client that does not end its stream within
    /// <see cref="s_requestEndWait"/> (or sends more) gets the old behaviour: the call ends anyway.
    /// </summary>
    private static async Task AwaitRequestEndAsync(IAsyncStreamReader<V1.TransactRequest> requestStream, CancellationToken cancellationToken)
    {
        using var wait = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
        wait.CancelAfter(s_requestEndWait);
        try
        {
            await requestStream.MoveNext(wait.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is OperationCanceledException or IOException or InvalidOperationException or RpcException)
        {
            // The outcome is delivered; how the request stream ends no longer matters.
        }
    }
}
