using Grpc.Core;
using V1 = Hyder.Api.V1;

namespace Hyder.Client;

/// <summary>
/// An interactive transaction over one <c>Transact</c> stream: reads and writes on the snapshot
/// taken at begin, then <see cref="CommitAsync"/>. Disposing it aborts it unless it committed.
/// </summary>
/// <remarks>
/// <para>
/// Operations may be pipelined: a caller may issue several without awaiting the previous ones
/// (start eight <see cref="GetAsync"/> calls, then <c>await Task.WhenAll</c>), and then
/// <see cref="CommitAsync"/> right behind them. They are written to the stream in the order they
/// are called (one write at a time), the server runs them in that order, and its answers complete
/// them in that order. Pipelined operations must not depend on each other's results: an operation
/// that needs an earlier read's value must await that read first. Calls from several threads are
/// safe, but their order is then the order in which the calls happen to arrive. Each call copies
/// its key and value before it returns, so the caller may reuse those arrays at once. Requests
/// issued inside a <see cref="Batch"/> scope leave together when it ends, as one message.
/// </para>
/// <para>
/// Any failure (a refused operation, cancellation of any pending operation, the deadline, a lost
/// connection) ends the stream, and the server aborts the transaction: the failing operation and
/// every operation pending behind it throw (the one cancelled throws
/// <see cref="OperationCanceledException"/>, the others a <see cref="HyderException"/>), and later
/// calls throw <see cref="InvalidOperationException"/>. Operations answered before the failure keep
/// their results, but nothing is applied. A stream that ends while nothing is pending (the
/// deadline passed) ends the transaction too: <see cref="IsActive"/> turns false, and the next
/// call throws that failure. The deadline (<see cref="HyderClientSettings.Timeout"/>) covers the
/// whole transaction. Do not block a thread on an operation's task (<c>.Result</c>):
/// answers complete operations on the thread that reads the stream.
/// </para>
/// </remarks>
public sealed partial class HyderTransaction : IAsyncDisposable
{
    private static readonly TimeSpan s_abortTimeout = TimeSpan.FromSeconds(5);

    private readonly HyderClient _client;
    private readonly AsyncDuplexStreamingCall<V1.TransactRequest, V1.TransactResponse> _call;
    private State _state;

    private HyderTransaction(HyderClient client, AsyncDuplexStreamingCall<V1.TransactRequest, V1.TransactResponse> call, IsolationLevel isolation, bool pooled = false)
    {
        _client = client;
        _call = call;
        Isolation = isolation;
        _pooled = pooled;
    }

    private enum State
    {
        Active,
        Committed,
        Aborted,
        Failed,
    }

    /// <summary>The isolation level.</summary>
    public IsolationLevel Isolation { get; }

    /// <summary>The sequence of the committed state the transaction reads.</summary>
    public long SnapshotSequence { get; private set; }

    /// <summary>True until the transaction commits, aborts or fails.</summary>
    public bool IsActive => _state == State.Active;

    /// <summary>Reads a key.</summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="cancellationToken">Cancels the read (and with it the transaction).</param>
    /// <returns>The payload, or null when the key is absent.</returns>
    public async Task<byte[]?> GetAsync(byte[] key, CancellationToken cancellationToken = default)
    {
        var result = (await OperateAsync(HyderOperation.Get(key), cancellationToken).ConfigureAwait(false)).Result;
        return result.Found ? Wire.Take(result.Value) : null;
    }

    /// <summary>
    /// Writes a key (insert or update). The key and the value are copied into the request when the
    /// method is called: the caller may change or reuse the arrays as soon as it returns.
    /// </summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="value">The payload.</param>
    /// <param name="cancellationToken">Cancels the write (and with it the transaction).</param>
    /// <returns>A task that completes when the server has applied the write to the transaction.</returns>
    public async Task PutAsync(byte[] key, byte[] value, CancellationToken cancellationToken = default) =>
        await OperateAsync(HyderOperation.Put(key, value), cancellationToken).ConfigureAwait(false);

    /// <summary>Deletes a key.</summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="cancellationToken">Cancels the delete (and with it the transaction).</param>
    /// <returns>True when the key existed.</returns>
    public async Task<bool> DeleteAsync(byte[] key, CancellationToken cancellationToken = default) =>
        (await OperateAsync(HyderOperation.Delete(key), cancellationToken).ConfigureAwait(false)).Result.Found;

    /// <summary>
    /// Adds <paramref name="delta"/> to the 8-byte little-endian counter at <paramref name="key"/>
    /// (absent: 0) as a commutative operation: it returns nothing and never conflicts with another
    /// transaction's operations on the key (a read of the key in this transaction does). With
    /// bounds, the result must lie in [<paramref name="min"/>, <paramref name="max"/>] where the
    /// transaction lands in the log, else the commit throws <see cref="BoundViolatedException"/>.
    /// </summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="delta">The amount.</param>
    /// <param name="min">The lowest result allowed (null: none).</param>
    /// <param name="max">The highest result allowed (null: none).</param>
    /// <param name="cancellationToken">Cancels the operation (and with it the transaction).</param>
    /// <returns>A task that completes when the server has recorded the operation.</returns>
    public async Task AddAsync(byte[] key, long delta, long? min = null, long? max = null, CancellationToken cancellationToken = default) =>
        await OperateAsync(HyderOperation.Add(key, delta, min, max), cancellationToken).ConfigureAwait(false);

    /// <summary>Keeps the larger of the counter at <paramref name="key"/> and <paramref name="value"/>; commutative.</summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="value">The operand.</param>
    /// <param name="cancellationToken">Cancels the operation (and with it the transaction).</param>
    /// <returns>A task that completes when the server has recorded the operation.</returns>
    public async Task MaxAsync(byte[] key, long value, CancellationToken cancellationToken = default) =>
        await OperateAsync(HyderOperation.Max(key, value), cancellationToken).ConfigureAwait(false);

    /// <summary>Keeps the smaller of the counter at <paramref name="key"/> and <paramref name="value"/>; commutative.</summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="value">The operand.</param>
    /// <param name="cancellationToken">Cancels the operation (and with it the transaction).</param>
    /// <returns>A task that completes when the server has recorded the operation.</returns>
    public async Task MinAsync(byte[] key, long value, CancellationToken cancellationToken = default) =>
        await OperateAsync(HyderOperation.Min(key, value), cancellationToken).ConfigureAwait(false);

    /// <summary>Ordered put: <paramref name="key"/> keeps (order, value) with the highest order; commutative.</summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="order">The order.</param>
    /// <param name="value">The payload.</param>
    /// <param name="cancellationToken">Cancels the operation (and with it the transaction).</param>
    /// <returns>A task that completes when the server has recorded the operation.</returns>
    public async Task OPutAsync(byte[] key, long order, byte[] value, CancellationToken cancellationToken = default) =>
        await OperateAsync(HyderOperation.OPut(key, order, value), cancellationToken).ConfigureAwait(false);

    /// <summary>Inserts (order, value) into the list at <paramref name="key"/> of the <paramref name="k"/> highest orders; commutative.</summary>
    /// <param name="key">The key (not empty).</param>
    /// <param name="k">The list's length (1 to the server's MaxTopK).</param>
    /// <param name="order">The order.</param>
    /// <param name="value">The payload.</param>
    /// <param name="cancellationToken">Cancels the operation (and with it the transaction).</param>
    /// <returns>A task that completes when the server has recorded the operation.</returns>
    public async Task TopKInsertAsync(byte[] key, int k, long order, byte[] value, CancellationToken cancellationToken = default) =>
        await OperateAsync(HyderOperation.TopKInsert(key, k, order, value), cancellationToken).ConfigureAwait(false);

    /// <summary>Reads keys in [<paramref name="low"/>, <paramref name="high"/>) in ascending order, seeing the transaction's own writes.</summary>
    /// <param name="low">Inclusive low bound (null: unbounded).</param>
    /// <param name="high">Exclusive high bound (null: unbounded).</param>
    /// <param name="limit">Most rows (0: the server's maximum).</param>
    /// <param name="cancellationToken">Cancels the scan (and with it the transaction).</param>
    /// <returns>The rows.</returns>
    public async Task<IReadOnlyList<KeyValuePair<byte[], byte[]>>> ScanAsync(byte[]? low, byte[]? high, int limit = 0, CancellationToken cancellationToken = default) =>
        Wire.Rows((await OperateAsync(HyderOperation.Scan(low, high, limit), cancellationToken).ConfigureAwait(false)).Result.Rows);

    /// <summary>Commits: the server appends the intention and waits for meld's decision.</summary>
    /// <param name="cancellationToken">Cancels the wait; the outcome is then unknown to the caller.</param>
    /// <returns>The commit.</returns>
    /// <exception cref="TransactionAbortedException">It aborted; nothing was applied.</exception>
    /// <exception cref="TransactionOutcomeUnknownException">The server could not learn the outcome.</exception>
    /// <remarks>
    /// It may be issued while operations are still pending: it is written behind them, and the
    /// server commits only after it has answered all of them. If one of them fails, the commit
    /// fails with the same error and nothing is applied.
    /// </remarks>
    public async Task<CommitResult> CommitAsync(CancellationToken cancellationToken = default)
    {
        var response = await SendAsync(new V1.TransactRequest { Commit = new V1.CommitRequest() }, V1.TransactResponse.ResponseOneofCase.Outcome, cancellationToken, ends: true).ConfigureAwait(false);
        var outcome = response.Outcome;
        _state = outcome.Status == V1.TransactionStatus.Committed ? State.Committed : State.Aborted;
        HyderClient.CountOutcome(outcome);
        _client.Observe(outcome);
        await FinishAsync().ConfigureAwait(false);
        Wire.EnsureCommitted(outcome);
        return new CommitResult(outcome.Ordinal, outcome.SnapshotSequence, []);
    }

    /// <summary>Aborts: the server throws the transaction's work away.</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>A task that completes when the server has aborted the transaction.</returns>
    public async Task AbortAsync(CancellationToken cancellationToken = default)
    {
        await SendAsync(new V1.TransactRequest { Abort = new V1.AbortRequest() }, V1.TransactResponse.ResponseOneofCase.Outcome, cancellationToken, ends: true).ConfigureAwait(false);
        _state = State.Aborted;
        await FinishAsync().ConfigureAwait(false);
    }

    /// <summary>
    /// Aborts the transaction unless it committed (or a commit or abort is under way), and ends the
    /// stream. With operations still pending it only ends the stream, and the server aborts.
    /// </summary>
    /// <returns>A task that completes when the stream has ended.</returns>
    public async ValueTask DisposeAsync()
    {
        bool abort;
        lock (_gate)
        {
            if (_state == State.Active && _unwritten.Count == 1 && _awaiting.Count == 1 && _awaiting.Peek().Unawaited)
            {
                // A pipelined begin nothing followed: it was never sent, so there is nothing to abort.
                _unwritten.Clear();
                _awaiting.Clear();
                _state = State.Aborted;
                _failureReported = true; // The reader's end when the call is disposed below is no news.
            }

            abort = _state == State.Active && !_ending && _awaiting.Count == 0;
        }

        if (abort)
        {
            using var timeout = new CancellationTokenSource(s_abortTimeout);
            try
            {
                await AbortAsync(timeout.Token).ConfigureAwait(false);
            }
            catch (Exception e) when (e is HyderException or OperationCanceledException or InvalidOperationException)
            {
                // The stream is gone either way; the server aborts a transaction whose stream ends.
                Log.AbortOnDisposeFailed(_client.Logger, e);
            }
        }

        if (!Volatile.Read(ref _callReturned))
        {
            _call.Dispose();
        }

        if (_reader is { } reader)
        {
            // The disposed call ends the read; the reader turns every failure into the transaction's.
            await reader.ConfigureAwait(false);
        }

        _readCancel.Dispose();
    }

    internal static async Task<HyderTransaction> BeginAsync(HyderClient client, IsolationLevel isolation, CancellationToken cancellationToken)
    {
        var begin = new V1.TransactRequest { Begin = new V1.BeginRequest { Isolation = Wire.ToMessage(isolation), MinOrdinal = client.MinOrdinal } };
        for (var attempt = 0; ; attempt++)
        {
            // The stream's deadline covers the transaction; the caller's token covers only the begin.
            var call = client.Stub.Transact(client.Options(CancellationToken.None));
            var transaction = new HyderTransaction(client, call, isolation);
            try
            {
                var response = await transaction.BeginRoundTripAsync(begin, attempt, cancellationToken).ConfigureAwait(false);
                transaction.SnapshotSequence = response.Begun.SnapshotSequence;
                client.Session.Observe(transaction.SnapshotSequence);
                transaction._reader = transaction.ReadResponsesAsync();
                return transaction;
            }
            catch (RetryBeginException)
            {
                call.Dispose();
            }
            catch
            {
                call.Dispose();
                throw;
            }

            // Nothing had begun: a new stream may.
            await client.BackoffAsync(attempt, cancellationToken).ConfigureAwait(false);
        }
    }

    internal static HyderTransaction BeginPipelined(HyderClient client, IsolationLevel isolation)
    {
        var begin = new V1.TransactRequest { Begin = new V1.BeginRequest { Isolation = Wire.ToMessage(isolation), MinOrdinal = client.MinOrdinal } };
        var (call, reused) = client.RentTransact();
        var transaction = new HyderTransaction(client, call, isolation, pooled: true) { _reused = reused };
        if (client.Settings.Timeout is { } timeout)
        {
            // The call may outlive this transaction, so it has no deadline: the transaction's own
            // ends its reads, which cancels the call (reported as DEADLINE_EXCEEDED).
            transaction._readCancel.CancelAfter(timeout);
        }

        transaction.QueueBegin(begin);
        transaction._reader = transaction.ReadResponsesAsync();
        return transaction;
    }

    /// <summary>Sends an operation; the public method awaits the answer (one state machine per operation, not two).</summary>
    private ValueTask<V1.TransactResponse> OperateAsync(HyderOperation operation, CancellationToken cancellationToken) =>
        SendAsync(new V1.TransactRequest { Operation = Wire.ToMessage(operation) }, V1.TransactResponse.ResponseOneofCase.Result, cancellationToken);

    /// <summary>
    /// The begin, one strict round trip before anything else is on the stream: a retryable failure
    /// here means nothing began, so a new stream may try again.
    /// </summary>
    private async Task<V1.TransactResponse> BeginRoundTripAsync(V1.TransactRequest request, int attempt, CancellationToken cancellationToken)
    {
        try
        {
            try
            {
                await _call.RequestStream.WriteAsync(request, CancellationToken.None).ConfigureAwait(false);
            }
            catch (RpcException e) when (e.StatusCode == StatusCode.Cancelled && !cancellationToken.IsCancellationRequested)
            {
                // The server may end the call before the request is written (an interceptor refuses
                // it: UNAUTHENTICATED, PERMISSION_DENIED); the write then only sees a cancelled
                // stream. The call's own status, read from the response, says why.
                await _call.ResponseStream.MoveNext(cancellationToken).ConfigureAwait(false);
                throw;
            }

            if (!await _call.ResponseStream.MoveNext(cancellationToken).ConfigureAwait(false))
            {
                throw new HyderException(StatusCode.Internal, "The server ended the transaction without an answer.");
            }

            var response = _call.ResponseStream.Current;
            return response.ResponseCase == V1.TransactResponse.ResponseOneofCase.Begun
                ? response
                : throw new HyderException(StatusCode.Internal, $"The server answered {response.ResponseCase} where {V1.TransactResponse.ResponseOneofCase.Begun} was due.");
        }
        catch (RpcException e) when (_client.Retryable(e, attempt, cancellationToken))
        {
            _state = State.Failed;
            throw new RetryBeginException();
        }
        catch (RpcException e)
        {
            _state = State.Failed;
            throw Wire.Translate(e, cancellationToken);
        }
        catch (HyderException)
        {
            _state = State.Failed;
            throw;
        }
    }

    /// <summary>
    /// Half-closes the request stream and reads the call's status, so the stream ends cleanly; a
    /// pipelined transaction's call instead goes back to the client for the next one.
    /// </summary>
    private async Task FinishAsync()
    {
        if (_pooled)
        {
            // The outcome was the last answer and the writer wrote the commit or abort last: the
            // call is between transactions, as the server sees it too, once that write is done
            // (the answer can come before the write's task does).
            await WriterIdleAsync().ConfigureAwait(false);

            lock (_gate)
            {
                if (_failure is not null || _awaiting.Count > 0 || _callReturned)
                {
                    return;
                }

                _callReturned = true;
            }

            _client.ReturnTransact(_call);
            return;
        }

        // The writer ends the request stream right after the commit or abort; the outcome can
        // arrive before it has, so this waits for it, and ends the stream itself if the writer
        // did not get that far.
        await WriterIdleAsync().ConfigureAwait(false);
        await EndStreamAsync(_call, Volatile.Read(ref _requestsEnded)).ConfigureAwait(false);
    }

    /// <summary>
    /// Ends a <c>Transact</c> call cleanly once nothing more is due on it: half-closes the request
    /// stream (unless <paramref name="requestsEnded"/>) and reads the call's status. A call
    /// disposed while its request stream is still open is reset (RST_STREAM), and a server that
    /// sees many resets refuses new streams on the connection (ENHANCE_YOUR_CALM, Kestrel's
    /// rapid-reset limit). Failures are ignored: how the stream ends no longer matters.
    /// </summary>
    internal static async Task EndStreamAsync(AsyncDuplexStreamingCall<V1.TransactRequest, V1.TransactResponse> call, bool requestsEnded)
    {
        try
        {
            if (!requestsEnded)
            {
                await call.RequestStream.CompleteAsync().ConfigureAwait(false);
            }

            using var timeout = new CancellationTokenSource(s_abortTimeout);
            await call.ResponseStream.MoveNext(timeout.Token).ConfigureAwait(false);
        }
        catch (Exception e) when (e is RpcException or OperationCanceledException or InvalidOperationException or IOException)
        {
            // The outcome is known (or there was none to wait for); how the stream ends no longer matters.
        }
    }

    /// <summary>The begin failed with UNAVAILABLE and may be tried again on a new stream.</summary>
    private sealed class RetryBeginException : Exception;
}
