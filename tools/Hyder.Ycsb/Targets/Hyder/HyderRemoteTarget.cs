using Hyder.Client;
using Hyder.Ycsb.Workloads;
using ClientAbortCause = Hyder.Client.AbortCause;
using ClientIsolation = Hyder.Client.IsolationLevel;
using IsolationLevel = Hyder.Ycsb.Workloads.IsolationLevel;

namespace Hyder.Ycsb.Targets.Hyder;

/// <summary>
/// <c>--connect</c>: a running Hyder cluster through Hyder.Client, one interactive transaction
/// (a gRPC stream) per session at a time. The client's own retries stay off: the driver retries
/// aborted transactions itself and counts every attempt.
/// </summary>
internal sealed class HyderRemoteTarget : ITarget
{
    private readonly HyderClient _client;

    /// <summary>Connects to a running cluster.</summary>
    /// <param name="connect">An address or a Hyder.Client connection string.</param>
    /// <param name="multiplex">One-shot transactions share one ExecuteStream call (<c>--multiplex</c>; also <c>Multiplex=true</c> in the connection string).</param>
    public HyderRemoteTarget(string connect, bool multiplex = false)
    {
        HyderClientSettings settings;
        try
        {
            settings = connect.Contains('=', StringComparison.Ordinal)
                ? HyderClientSettings.Parse(connect)
                : new HyderClientSettings { Endpoint = new Uri(connect.Contains("://", StringComparison.Ordinal) ? connect : "http://" + connect) };
        }
        catch (Exception e) when (e is FormatException or ArgumentException or UriFormatException)
        {
            throw new TargetUnavailableException($"--connect {connect}: {e.Message} (give http://host:port or a connection string such as \"Endpoint=http://127.0.0.1:7300;Timeout=30\").", e);
        }

        _client = new HyderClient(settings with { MaxRetries = 0, Multiplex = settings.Multiplex || multiplex });
    }

    public string Description => $"Hyder cluster at {_client.Settings.Endpoint} through Hyder.Client (gRPC{(_client.Settings.Multiplex ? ", one-shot transactions multiplexed on one ExecuteStream" : string.Empty)})";

    public async Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken)
    {
        try
        {
            await _client.GetStatusAsync(cancellationToken).ConfigureAwait(false);
            if (!reset)
            {
                return;
            }

            foreach (var space in keySpaces)
            {
                while (true)
                {
                    var batch = new List<HyderOperation>();
                    await foreach (var (key, _) in _client.ScanAsync(HyderKeys.Start(space), HyderKeys.End(space), 1000, cancellationToken).ConfigureAwait(false))
                    {
                        batch.Add(HyderOperation.Delete(key));
                    }

                    if (batch.Count == 0)
                    {
                        break;
                    }

                    await _client.ExecuteAsync(ClientIsolation.Serializable, batch, cancellationToken).ConfigureAwait(false);
                }
            }
        }
        catch (HyderException e) when (e is not Client.TransactionAbortedException)
        {
            throw new TargetUnavailableException($"the Hyder server at {_client.Settings.Endpoint} failed: {e.StatusCode}: {e.Message}", e);
        }
    }

    public Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken) => Task.FromResult<ITargetSession>(new Session(_client));

    public async ValueTask<object?> SampleAsync(CancellationToken cancellationToken) => await _client.GetStatusAsync(cancellationToken).ConfigureAwait(false);

    /// <summary>The server's own commit and abort counts over the window (all its clients', not only ours).</summary>
    public async ValueTask<IReadOnlyList<(string Metric, double Value)>> SummarizeAsync(object? start, long committedTransactions, CancellationToken cancellationToken)
    {
        var end = await _client.GetStatusAsync(cancellationToken).ConfigureAwait(false);
        var begin = start as HyderClusterStatus ?? end;
        return
        [
            ("Intentions", end.Committed + end.Aborted - begin.Committed - begin.Aborted),
            ("MeldCommitted", end.Committed - begin.Committed),
            ("MeldAborted", end.Aborted - begin.Aborted),
        ];
    }

    public ValueTask DisposeAsync() => _client.DisposeAsync();

    private static ClientIsolation Map(IsolationLevel isolation) => isolation switch
    {
        IsolationLevel.Serializable => ClientIsolation.Serializable,
        IsolationLevel.RepeatableRead => ClientIsolation.RepeatableRead,
        IsolationLevel.Snapshot => ClientIsolation.SnapshotIsolation,
        IsolationLevel.ReadCommitted => ClientIsolation.ReadCommitted,
        _ => throw new ArgumentOutOfRangeException(nameof(isolation), isolation, null),
    };

    private static Metrics.AbortCause Map(ClientAbortCause cause) => cause switch
    {
        ClientAbortCause.WriteWrite => Metrics.AbortCause.WriteWrite,
        ClientAbortCause.ReadWrite => Metrics.AbortCause.ReadWrite,
        ClientAbortCause.Phantom => Metrics.AbortCause.Phantom,
        ClientAbortCause.DeleteConflict => Metrics.AbortCause.DeleteConflict,
        ClientAbortCause.Rejected => Metrics.AbortCause.Rejected,
        ClientAbortCause.GroupConflict => Metrics.AbortCause.GroupConflict,
        ClientAbortCause.FateShared => Metrics.AbortCause.FateShared,
        ClientAbortCause.SnapshotTooOld => Metrics.AbortCause.SnapshotTooOld,
        ClientAbortCause.SnapshotBeforeCheckpoint => Metrics.AbortCause.SnapshotBeforeCheckpoint,
        ClientAbortCause.BoundViolated => Metrics.AbortCause.BoundViolated,
        ClientAbortCause.TypeMismatch => Metrics.AbortCause.TypeMismatch,
        ClientAbortCause.SplitPhase => Metrics.AbortCause.SplitPhase,
        _ => Metrics.AbortCause.Other,
    };

    /// <summary>One client transaction (a Transact stream) at a time.</summary>
    private sealed class Session(HyderClient client) : HyderSession
    {
        private readonly List<Task<byte[]?>> _reads = [];
        private readonly List<Task> _writes = [];
        private HyderTransaction? _tx;

        // The one-shot request's operations, reused: ExecuteAsync reads them before it returns.
        private HyderOperation[] _request = [];

        public override async ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken)
        {
            await RollbackAsync(cancellationToken).ConfigureAwait(false);
            _tx = await Guard(client.BeginAsync(Map(isolation), cancellationToken)).ConfigureAwait(false);
        }

        public override async ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken)
        {
            var tx = _tx ?? throw new InvalidOperationException("No transaction is open.");
            _tx = null;
            await using (tx.ConfigureAwait(false))
            {
                try
                {
                    await tx.CommitAsync(cancellationToken).ConfigureAwait(false);
                    return CommitOutcome.Success;
                }
                catch (Client.TransactionAbortedException e)
                {
                    return CommitOutcome.Aborted(Map(e.Cause));
                }
                catch (TransactionOutcomeUnknownException)
                {
                    return CommitOutcome.Aborted(Metrics.AbortCause.Unknown);
                }
                catch (HyderException e)
                {
                    throw Unavailable(e);
                }
            }
        }

        public override async ValueTask RollbackAsync(CancellationToken cancellationToken)
        {
            var tx = _tx;
            _tx = null;
            if (tx is not null)
            {
                await tx.DisposeAsync().ConfigureAwait(false);
            }
        }

        public override ValueTask DisposeAsync() => RollbackAsync(CancellationToken.None);

        /// <summary>Always Hyder's commutative Add (a gRPC operation); the server's configuration decides how it runs.</summary>
        public override async ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, long? min, long? max, CancellationToken cancellationToken) =>
            await Guard(Open.AddAsync(HyderKeys.Encode(space, key.Span), delta, min, max, cancellationToken)).ConfigureAwait(false);

        /// <summary>
        /// A one-shot call serializes the values, and a put copies its value into its request when it
        /// is called (Hyder.Client's PutAsync): they need not be copies of their own.
        /// </summary>
        protected override bool ReadsValuesOnlyDuringTheCall => true;

        /// <summary>One unary Execute call: the whole transaction in one round trip.</summary>
        protected override async ValueTask<OneShotOutcome> ExecuteOneShotAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken)
        {
            if (_request.Length != operations.Length)
            {
                _request = new HyderOperation[operations.Length];
            }

            var request = _request;
            for (var i = 0; i < request.Length; i++)
            {
                var (key, value) = operations[i];
                request[i] = value is null ? HyderOperation.Get(key) : HyderOperation.Put(key, value);
            }

            try
            {
                var commit = await client.ExecuteAsync(Map(isolation), request, cancellationToken).ConfigureAwait(false);
                var notFound = 0;
                for (var i = 0; i < operations.Length; i++)
                {
                    if (operations[i].Value is null && !commit.Results[i].Found)
                    {
                        notFound++;
                    }
                }

                return new OneShotOutcome(CommitOutcome.Success, notFound);
            }
            catch (Client.TransactionAbortedException e)
            {
                return new OneShotOutcome(CommitOutcome.Aborted(Map(e.Cause)), 0);
            }
            catch (TransactionOutcomeUnknownException)
            {
                return new OneShotOutcome(CommitOutcome.Aborted(Metrics.AbortCause.Unknown), 0);
            }
            catch (HyderException e)
            {
                throw Unavailable(e);
            }
        }

        public override bool CanPipeline => true;

        /// <summary>
        /// One interactive transaction, pipelined: the reads are sent without waiting for each
        /// answer, then awaited together (the point where an application decides what to write);
        /// the writes follow with the commit right behind them. Three round trips (begin, reads,
        /// writes and commit) in place of one per operation; the stream keeps them in plan order.
        /// </summary>
        protected override async ValueTask<OneShotOutcome> ExecutePipelinedAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken)
        {
            await RollbackAsync(cancellationToken).ConfigureAwait(false);
            // The begin travels with the first batch (a refused begin fails it, and is handled below).
            var tx = client.BeginPipelined(Map(isolation));
            await using (tx.ConfigureAwait(false))
            {
                _reads.Clear();
                _writes.Clear();
                var notFound = 0;
                Task<CommitResult>? commit = null;
                try
                {
                    // Each run of reads goes out as one batch, and so do the writes with the commit
                    // behind them: a write waits for the reads before it, as the driver's plan says.
                    var next = 0;
                    while (next < operations.Length)
                    {
                        var reading = operations[next].Value is null;
                        using (tx.Batch())
                        {
                            for (; next < operations.Length && (operations[next].Value is null) == reading; next++)
                            {
                                var (key, value) = operations[next];
                                if (reading)
                                {
                                    _reads.Add(tx.GetAsync(key, cancellationToken));
                                }
                                else
                                {
                                    _writes.Add(tx.PutAsync(key, value!, cancellationToken));
                                }
                            }

                            if (next == operations.Length)
                            {
                                commit = tx.CommitAsync(cancellationToken);
                            }
                        }

                        notFound += await AwaitReadsAsync().ConfigureAwait(false);
                    }

                    commit ??= tx.CommitAsync(cancellationToken);
                    foreach (var write in _writes)
                    {
                        await write.ConfigureAwait(false);
                    }

                    await commit.ConfigureAwait(false);
                    return new OneShotOutcome(CommitOutcome.Success, notFound);
                }
                catch (Exception e) when (e is HyderException)
                {
                    // The first failure ends the transaction and fails whatever was still pending:
                    // observe those so they do not surface later as unobserved.
                    Observe(_reads);
                    Observe(_writes);
                    if (commit is not null)
                    {
                        Observe(commit);
                    }

                    return e switch
                    {
                        Client.TransactionAbortedException aborted => new OneShotOutcome(CommitOutcome.Aborted(Map(aborted.Cause)), 0),
                        TransactionOutcomeUnknownException => new OneShotOutcome(CommitOutcome.Aborted(Metrics.AbortCause.Unknown), 0),
                        _ => throw Unavailable((HyderException)e),
                    };
                }
                finally
                {
                    _reads.Clear();
                    _writes.Clear();
                }
            }
        }

        protected override async ValueTask<byte[]?> GetValueAsync(byte[] key, CancellationToken cancellationToken) =>
            await Guard(Open.GetAsync(key, cancellationToken)).ConfigureAwait(false);

        protected override async ValueTask PutValueAsync(byte[] key, byte[] value, CancellationToken cancellationToken) =>
            await Guard(Open.PutAsync(key, value, cancellationToken)).ConfigureAwait(false);

        protected override async ValueTask<bool> DeleteKeyAsync(byte[] key, CancellationToken cancellationToken) =>
            await Guard(Open.DeleteAsync(key, cancellationToken)).ConfigureAwait(false);

        protected override async ValueTask<int> ScanRangeAsync(byte[] low, byte[] high, int limit, CancellationToken cancellationToken) =>
            (await Guard(Open.ScanAsync(low, high, limit, cancellationToken)).ConfigureAwait(false)).Count;

        private static void Observe(IEnumerable<Task> tasks)
        {
            foreach (var task in tasks)
            {
                Observe(task);
            }
        }

        private static void Observe(Task task) =>
            task.ContinueWith(static t => _ = t.Exception, CancellationToken.None, TaskContinuationOptions.OnlyOnFaulted | TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);

        /// <summary>Awaits the reads sent so far; returns how many found no record.</summary>
        private async ValueTask<int> AwaitReadsAsync()
        {
            var notFound = 0;
            foreach (var read in _reads)
            {
                if (await read.ConfigureAwait(false) is null)
                {
                    notFound++;
                }
            }

            _reads.Clear();
            return notFound;
        }

        private HyderTransaction Open => _tx ?? throw new InvalidOperationException("No transaction is open.");

        private static async Task Guard(Task call)
        {
            try
            {
                await call.ConfigureAwait(false);
            }
            catch (Client.TransactionAbortedException e)
            {
                throw new TransactionAbortedException(Map(e.Cause), e.Message, e);
            }
            catch (HyderException e)
            {
                throw Unavailable(e);
            }
        }

        private static async Task<T> Guard<T>(Task<T> call)
        {
            try
            {
                return await call.ConfigureAwait(false);
            }
            catch (Client.TransactionAbortedException e)
            {
                throw new TransactionAbortedException(Map(e.Cause), e.Message, e);
            }
            catch (HyderException e)
            {
                throw Unavailable(e);
            }
        }

        private static TargetUnavailableException Unavailable(HyderException e) => new($"the Hyder server failed: {e.StatusCode}: {e.Message}", e);
    }
}
