using Grpc.Core;
using V1 = Hyder.Api.V1;

namespace Hyder.Server.Grpc;

public sealed partial class HyderService
{
    /// <summary>
    /// Runs one-shot transactions multiplexed on one stream: each request carries an id and an
    /// <c>ExecuteRequest</c>, checked and run as <see cref="Execute"/> runs it (the same role check,
    /// limits and mapping); up to <see cref="MaxTransactionsPerStream"/> run at once, and each is
    /// answered with its id, in completion order, with its outcome or a <c>TransactionError</c>.
    /// </summary>
    /// <param name="requestStream">The client's transactions.</param>
    /// <param name="responseStream">Where the answers go.</param>
    /// <param name="context">The call.</param>
    /// <returns>A task that completes when the client has ended its requests and every one is answered.</returns>
    public override async Task ExecuteStream(IAsyncStreamReader<V1.ExecuteStreamRequest> requestStream, IServerStreamWriter<V1.ExecuteStreamResponse> responseStream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(requestStream);
        ArgumentNullException.ThrowIfNull(responseStream);
        ArgumentNullException.ThrowIfNull(context);

        // The response headers go out before any request is read: a client that writes nothing
        // until it has them knows that a call failing before them never carried its transactions.
        await context.WriteResponseHeadersAsync(Metadata.Empty).ConfigureAwait(false);
        var call = new ExecuteStreamCall(this, HyderInterceptor.Caller(context), responseStream, context.CancellationToken);
        await call.RunAsync(requestStream, _stopping).ConfigureAwait(false);
    }
}
