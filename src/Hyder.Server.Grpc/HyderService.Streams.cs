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
}
