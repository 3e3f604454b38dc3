using System.Runtime.CompilerServices;
using System.Runtime.ExceptionServices;
using Grpc.Core;
using Hyder.Security;
using Hyder.Server.Engine;
using V1 = Hyder.Api.V1;

namespace Hyder.Server.Grpc;

public sealed partial class HyderService
{
    /// <summary>How long a call waits, after an outcome, for the client's next begin or the end of its request stream.</summary>
    private static readonly TimeSpan s_nextTransactionWait = TimeSpan.FromSeconds(10);

    /// <summary>
    /// Runs interactive transactions: the first request must be <c>begin</c> (answered with
    /// <c>begun</c>), then each operation is answered with its result in order, and <c>commit</c>
    /// or <c>abort</c> is answered with the outcome. After the outcome the client either ends its
    /// request stream, which ends the call, or begins its next transaction on the same call. A
    /// <c>batch</c> carries several requests in one message and is answered with their answers in
    /// order, in one or more batch responses; the whole batch is checked before any of it runs. A
    /// malformed request or a refusal ends the call with an error, and the transaction is aborted;
    /// so is a transaction whose request stream ends before commit.
    /// </summary>
    /// <remarks>
    /// After an outcome the call waits at most <see cref="s_nextTransactionWait"/> for the next
    /// request, and not at all once the server stops; then it ends (OK). It waits rather than
    /// returning at once because a call whose handler returns while the request stream is still
    /// open is reset by Kestrel, and the resets wait in the connection's drain queue until the
    /// client ends or resets the stream; at 64 transactions in flight on a busy machine that queue
    /// passed Kestrel's limit (twice the streams per connection), and the server then refused new
    /// streams with ENHANCE_YOUR_CALM.
    /// </remarks>
    /// <param name="requestStream">The client's requests.</param>
    /// <param name="responseStream">Where the answers go.</param>
    /// <param name="context">The call.</param>
    /// <returns>A task that completes when the call has ended.</returns>
    public override async Task Transact(IAsyncStreamReader<V1.TransactRequest> requestStream, IServerStreamWriter<V1.TransactResponse> responseStream, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(requestStream);
        ArgumentNullException.ThrowIfNull(responseStream);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        var call = new TransactCall(this, HyderInterceptor.Caller(context), responseStream, cancellationToken);
        using var between = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken, _stopping);
        try
        {
            while (true)
            {
                if (call.Ended)
                {
                    await call.EndAsync().ConfigureAwait(false);
                    if (!await NextTransactionAsync(requestStream, between).ConfigureAwait(false))
                    {
                        return;
                    }
                }
                else if (!await requestStream.MoveNext(cancellationToken).ConfigureAwait(false))
                {
                    return;
                }

                var request = requestStream.Current;
                if (request.RequestCase == V1.TransactRequest.RequestOneofCase.Batch)
                {
                    await call.RunBatchAsync(request.Batch).ConfigureAwait(false);
                }
                else
                {
                    await call.RunOneAsync(request).ConfigureAwait(false);
                }
            }
        }
        finally
        {
            await call.EndAsync().ConfigureAwait(false);
        }
    }

    /// <summary>
    /// After an outcome: true when the client sent its next request within
    /// <see cref="s_nextTransactionWait"/> (it is <c>Current</c>); false when it ended its request
    /// stream, did not go on in time, or the server is stopping. <paramref name="between"/> is the
    /// call's wait between transactions (the call's token and the server's stop, linked once per
    /// call): its timer is set for the wait and put off again after it.
    /// </summary>
    [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
    private static async ValueTask<bool> NextTransactionAsync(IAsyncStreamReader<V1.TransactRequest> requestStream, CancellationTokenSource between)
    {
        if (between.IsCancellationRequested)
        {
            return false;
        }

        between.CancelAfter(s_nextTransactionWait);
        try
        {
            return await requestStream.MoveNext(between.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is OperationCanceledException or IOException or InvalidOperationException or RpcException)
        {
            // The outcome is delivered; how the request stream ends no longer matters.
            return false;
        }
        finally
        {
            between.CancelAfter(Timeout.InfiniteTimeSpan);
        }
    }

    private static string Name(V1.TransactRequest.RequestOneofCase c) => c switch
    {
        V1.TransactRequest.RequestOneofCase.Begin => "begin",
        V1.TransactRequest.RequestOneofCase.Operation => "operation",
        V1.TransactRequest.RequestOneofCase.Commit => "commit",
        V1.TransactRequest.RequestOneofCase.Abort => "abort",
        V1.TransactRequest.RequestOneofCase.Batch => "batch",
        _ => "an empty request",
    };

    /// <summary>
    /// A <c>Transact</c> call's current transaction (a call carries one after another): the
    /// transaction once begun, the operations it has run, and whether it ended (committed or
    /// aborted by the client). <see cref="EndAsync"/> readies it for the next one.
    /// </summary>
    /// <remarks>
    /// The call runs one request at a time, so it reuses what each request needs: the engine
    /// operations of a batch, and the answer messages, each free again once the write that carried
    /// it has completed (the message is serialized by then). A transaction thus allocates none of
    /// them once its call has carried one of its size.
    /// </remarks>
    private sealed class TransactCall(HyderService service, CallerIdentity caller, IServerStreamWriter<V1.TransactResponse> responses, CancellationToken cancellationToken)
    {
        private readonly V1.TransactResponse _begun = new() { Begun = new V1.BeginResponse() };
        private readonly V1.TransactResponse _outcome = new() { Outcome = new V1.Outcome() };
        private readonly V1.TransactResponse _batch = new() { Batch = new V1.TransactResponseBatch() };

        /// <summary>Operations' answers (each a <c>result</c>, cleared) free for the next ones.</summary>
        private readonly Stack<V1.TransactResponse> _freeResults = new();

        /// <summary>A batch's operations, converted; cleared after each batch.</summary>
        private Operation[] _batchOperations = [];

        private IInteractiveTransaction? _transaction;
        private bool _ended;
        private int _operations;

        /// <summary>True once the transaction committed or was aborted by the client (its outcome is answered).</summary>
        public bool Ended => _ended;

        /// <summary>Checks and runs one request and writes its answer (<see cref="Ended"/> says whether it ended the transaction).</summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        public async ValueTask RunOneAsync(V1.TransactRequest request)
        {
            Check(request, -1, first: true, last: true);
            var operation = request.RequestCase == V1.TransactRequest.RequestOneofCase.Operation
                ? Messages.ToEngine(request.Operation, service._limits, "operation")
                : default;
            var answer = await RunAsync(request, operation).ConfigureAwait(false);
            await WriteAsync(answer).ConfigureAwait(false);
        }

        /// <summary>
        /// Checks the whole batch, then runs its requests in order and writes their answers in batch
        /// responses, a new one whenever the next answer would take the current one past half the
        /// message limit. On a failure the answers of the requests that ran are written first, then
        /// the call ends with the failure.
        /// </summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        public async ValueTask RunBatchAsync(V1.TransactRequestBatch batch)
        {
            var requests = batch.Requests;
            if (requests.Count == 0)
            {
                throw Messages.Invalid("batch: a batch holds at least one request");
            }

            if (_batchOperations.Length < requests.Count)
            {
                _batchOperations = new Operation[requests.Count];
            }

            try
            {
                await RunRequestsAsync(requests, _batchOperations).ConfigureAwait(false);
            }
            finally
            {
                // The batch's keys and values are the engine's now, or garbage: not this call's to keep.
                Array.Clear(_batchOperations, 0, requests.Count);
            }
        }

        /// <summary><see cref="RunBatchAsync"/>'s work, with <paramref name="operations"/> to convert the batch's operations into.</summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        private async ValueTask RunRequestsAsync(Google.Protobuf.Collections.RepeatedField<V1.TransactRequest> requests, Operation[] operations)
        {
            var limits = service._limits;
            var counted = 0;
            for (var i = 0; i < requests.Count; i++)
            {
                var request = requests[i];
                Check(request, i, first: i == 0, last: i == requests.Count - 1);
                if (request.RequestCase == V1.TransactRequest.RequestOneofCase.Operation)
                {
                    // Named as outside a batch: a client that batches on its own gets the same message.
                    counted++;
                    operations[i] = Messages.ToEngine(request.Operation, limits, "operation");
                }
            }

            if (_operations + counted > limits.MaxOperations)
            {
                throw Messages.Invalid($"the transaction exceeds the limit of {limits.MaxOperations} operations");
            }

            var budget = Math.Max(1, limits.MaxMessageBytes / 2);
            var answers = _batch.Batch.Responses;
            var bytes = 0;
            var lent = false;
            ExceptionDispatchInfo? failure = null;
            try
            {
                for (var i = 0; i < requests.Count; i++)
                {
                    if (lent && requests[i].RequestCase is V1.TransactRequest.RequestOneofCase.Commit or V1.TransactRequest.RequestOneofCase.Abort)
                    {
                        // The values the answers refer to are the transaction's, lent until it
                        // ends (docs/value-storage.md): they are written before it does.
                        await WriteAsync(_batch).ConfigureAwait(false);
                        bytes = 0;
                    }

                    var answer = await RunAsync(requests[i], operations[i]).ConfigureAwait(false);
                    var size = answer.CalculateSize();
                    if (answers.Count > 0 && bytes + size > budget)
                    {
                        // Written, the batch's answers are free again; the one in hand was not in it.
                        await WriteAsync(_batch).ConfigureAwait(false);
                        bytes = 0;
                    }

                    answers.Add(answer);
                    bytes += size;
                    lent |= answer.Result is { } result && (!result.Value.IsEmpty || result.Rows.Count > 0);
                }
            }
            catch (Exception e)
            {
                // Rethrown below, after the answers of the requests that ran.
                failure = ExceptionDispatchInfo.Capture(e);
            }

            if (failure is not null)
            {
                if (answers.Count > 0)
                {
                    await TryAnswerAsync().ConfigureAwait(false);
                }

                failure.Throw();
            }

            await WriteAsync(_batch).ConfigureAwait(false);
        }

        /// <summary>Writes an answer (one of this call's messages), then frees the messages it carried.</summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        private async ValueTask WriteAsync(V1.TransactResponse answer)
        {
            try
            {
                await responses.WriteAsync(answer).ConfigureAwait(false);
            }
            finally
            {
                // Serialized or failed: either way the answers give up the engine's arrays and are free.
                if (ReferenceEquals(answer, _batch))
                {
                    foreach (var carried in _batch.Batch.Responses)
                    {
                        Free(carried);
                    }

                    _batch.Batch.Responses.Clear();
                }
                else
                {
                    Free(answer);
                }
            }
        }

        /// <summary>A cleared <c>result</c> answer for an operation's result, free again once written.</summary>
        private V1.TransactResponse NextResult() =>
            _freeResults.TryPop(out var free) ? free : new V1.TransactResponse { Result = new V1.OperationResult() };

        /// <summary>Frees a written answer: a <c>result</c> goes back, cleared; the begun and outcome answers are the call's own.</summary>
        private void Free(V1.TransactResponse answer)
        {
            if (answer.ResponseCase == V1.TransactResponse.ResponseOneofCase.Result)
            {
                Messages.Clear(answer.Result);
                _freeResults.Push(answer);
            }
        }

        /// <summary>
        /// Writes the answers of the requests a failed batch ran, so the client gets them before the
        /// call's error, as it would have request by request; a call already gone is left to the failure.
        /// </summary>
        private async ValueTask TryAnswerAsync()
        {
            try
            {
                await WriteAsync(_batch).ConfigureAwait(false);
            }
            catch (Exception e) when (e is InvalidOperationException or IOException or OperationCanceledException or RpcException)
            {
                // The failure being rethrown says what happened.
            }
        }

        /// <summary>Aborts the transaction unless it ended, disposes it, and readies the call for its next one.</summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        public async ValueTask EndAsync()
        {
            var transaction = _transaction;
            var ended = _ended;
            (_transaction, _ended, _operations) = (null, false, 0);
            if (transaction is not null)
            {
                if (!ended)
                {
                    transaction.Abort();
                }

                await transaction.DisposeAsync().ConfigureAwait(false);
            }
        }

        /// <summary>Refuses a request the transaction cannot take where it stands (<paramref name="index"/> in its batch; -1: alone), before anything runs.</summary>
        private void Check(V1.TransactRequest request, int index, bool first, bool last)
        {
            var kind = request.RequestCase;
            if (_transaction is null && first)
            {
                if (kind != V1.TransactRequest.RequestOneofCase.Begin)
                {
                    throw Messages.Invalid($"the first message of Transact must be begin, not {Name(kind)}");
                }

                return;
            }

            switch (kind)
            {
                case V1.TransactRequest.RequestOneofCase.Operation:
                    // Before the operation reaches the transaction: the call ends and the transaction aborts.
                    CheckWrite(caller, request.Operation);
                    if (_transaction is not null && _operations + 1 > service._limits.MaxOperations)
                    {
                        throw Messages.Invalid($"the transaction exceeds the limit of {service._limits.MaxOperations} operations");
                    }

                    break;
                case V1.TransactRequest.RequestOneofCase.Commit or V1.TransactRequest.RequestOneofCase.Abort:
                    if (!last)
                    {
                        throw Messages.Invalid($"batch.requests[{index}] is {Name(kind)}, which must end its batch: nothing may follow it");
                    }

                    break;
                case V1.TransactRequest.RequestOneofCase.Batch:
                    throw Messages.Invalid($"batch.requests[{index}] is a batch: batches do not nest");
                default:
                    throw Messages.Invalid(kind == V1.TransactRequest.RequestOneofCase.Begin && !(first && last)
                        ? $"batch.requests[{index}] is begin, which may only come first in a batch sent before the transaction has begun"
                        : $"unexpected {Name(kind)} in a transaction that has begun");
            }
        }

        /// <summary>
        /// Runs one checked request (<paramref name="operation"/>: its operation, converted) and
        /// returns its answer: one of this call's messages, to be written before it is reused.
        /// </summary>
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
        private async ValueTask<V1.TransactResponse> RunAsync(V1.TransactRequest request, Operation operation)
        {
            switch (request.RequestCase)
            {
                case V1.TransactRequest.RequestOneofCase.Begin:
                    await service.MeldedAtLeastAsync(request.Begin.MinOrdinal, cancellationToken).ConfigureAwait(false);
                    var transaction = service._engine.Begin(Messages.ToEngine(request.Begin.Isolation));
                    _transaction = transaction;
                    _begun.Begun.SnapshotSequence = transaction.SnapshotSequence;
                    return _begun;
                case V1.TransactRequest.RequestOneofCase.Operation:
                    _operations++;
                    var result = await _transaction!.ExecuteAsync(operation, cancellationToken).ConfigureAwait(false);
                    var answer = NextResult();
                    Messages.Fill(answer.Result, result);
                    return answer;
                case V1.TransactRequest.RequestOneofCase.Commit:
                    _ended = true;
                    var outcome = await _transaction!.CommitAsync(cancellationToken).ConfigureAwait(false);
                    Messages.Fill(_outcome.Outcome, outcome);
                    return _outcome;
                default:
                    _ended = true;
                    _transaction!.Abort();
                    // Through the one mapping, so no field of a reused outcome keeps an earlier value.
                    Messages.Fill(_outcome.Outcome, new TransactionOutcome(TransactionStatus.Aborted, Hyder.Tree.Meld.AbortCause.None, "aborted by the client", 0, _transaction.SnapshotSequence, []));
                    return _outcome;
            }
        }
    }
}
