using System.Collections.Concurrent;
using System.Diagnostics;
using System.Diagnostics.Metrics;
using System.Net.Security;
using System.Runtime.CompilerServices;
using System.Security.Cryptography.X509Certificates;
using Grpc.Core;
using Grpc.Net.Client;
using Hyder.Security;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using V1 = Hyder.Api.V1;

namespace Hyder.Client;

/// <summary>
/// A client of one Hyder server over gRPC (Grpc.Net.Client and the stub Grpc.Tools generates from
/// hyder.proto). Thread-safe: share one per server and process; calls multiplex over HTTP/2
/// connections. <c>services.AddHyderClient(...)</c> registers one through Grpc.Net.ClientFactory.
/// </summary>
/// <remarks>
/// Failures surface as <see cref="TransactionAbortedException"/> (the transaction aborted; retry),
/// <see cref="TransactionOutcomeUnknownException"/>, <see cref="HyderException"/> with the gRPC
/// status code for everything else, and <see cref="OperationCanceledException"/> when the caller's
/// token cancels a call. Each call's deadline is <see cref="HyderClientSettings.Timeout"/> from its
/// start (an interactive transaction's covers the whole stream). UNAVAILABLE (the server could not
/// be reached, or refused before doing anything) is retried after a backoff, up to
/// <see cref="HyderClientSettings.MaxRetries"/> times, only where running the call twice cannot
/// change anything: snapshot reads, status, state hashes, a one-shot transaction whose operations
/// only read, a scan before its first rows, and the begin of an interactive transaction. A write
/// and a commit are never sent twice: their outcome may be unknown.
/// </remarks>
public sealed partial class HyderClient : IAsyncDisposable
{
    /// <summary>The name of the client's <see cref="Meter"/>.</summary>
    public const string MeterName = "Hyder.Client";

    private static readonly Meter s_meter = new(MeterName);
    private static readonly Counter<long> s_commits = s_meter.CreateCounter<long>("hyder.client.commits", description: "Transactions committed.");
    private static readonly Counter<long> s_aborts = s_meter.CreateCounter<long>("hyder.client.aborts", description: "Transactions aborted.");
    private static readonly Counter<long> s_retries = s_meter.CreateCounter<long>("hyder.client.retries", description: "Aborted transactions run again by the retry helper.");

    private readonly GrpcChannel? _channel;
    private readonly Metadata? _headers;
    private readonly ILogger _logger;
    private readonly ExecuteMultiplexer? _multiplexer;

    /// <summary>
    /// <c>Transact</c> calls whose transaction ended cleanly, kept for the next
    /// <see cref="BeginPipelined"/> (newest on top), with when each became idle.
    /// </summary>
    private readonly ConcurrentStack<(AsyncDuplexStreamingCall<Api.V1.TransactRequest, Api.V1.TransactResponse> Call, long Since)> _idleTransacts = new();
    private bool _disposed;

    /// <summary>Creates a client with a channel of its own.</summary>
    /// <param name="settings">Where the server is and how to call it.</param>
    /// <param name="logger">Where retries and failures are logged; none when null.</param>
    public HyderClient(HyderClientSettings settings, ILogger? logger = null)
        : this(logger, settings, null)
    {
    }

    /// <summary>Creates a client over a generated stub (Grpc.Net.ClientFactory's); the stub's channel is not the client's to dispose.</summary>
    /// <param name="settings">How to call the server (timeout, retries, token); the endpoint and TLS settings are the stub's channel's.</param>
    /// <param name="stub">The generated client.</param>
    /// <param name="logger">Where retries and failures are logged; none when null.</param>
    public HyderClient(HyderClientSettings settings, Api.V1.Hyder.HyderClient stub, ILogger? logger = null)
        : this(logger, settings, stub ?? throw new ArgumentNullException(nameof(stub)))
    {
    }

    private HyderClient(ILogger? logger, HyderClientSettings settings, Api.V1.Hyder.HyderClient? stub)
    {
        ArgumentNullException.ThrowIfNull(settings);
        Settings = settings;
        _logger = logger ?? NullLogger.Instance;
        if (stub is { } given)
        {
            Stub = given;
        }
        else
        {
            _channel = GrpcChannel.ForAddress(settings.Endpoint, ChannelOptions(settings, CreateHandler(settings)));
            Stub = new Api.V1.Hyder.HyderClient(_channel);
        }

        Session = settings.Session ?? new HyderSession();
        if (settings.Multiplex)
        {
            _multiplexer = new ExecuteMultiplexer(this);
        }

        if (settings.Token is { Length: > 0 } token)
        {
            _headers = new Metadata { { "authorization", "Bearer " + token } };
        }
    }

    /// <summary>Creates a client from a connection string (<see cref="HyderClientSettings.Parse"/>).</summary>
    /// <param name="connectionString">Such as <c>Endpoint=http://127.0.0.1:5000;Timeout=30;MaxRetries=10</c>.</param>
    /// <param name="logger">Where retries and failures are logged; none when null.</param>
    public HyderClient(string connectionString, ILogger? logger = null)
        : this(HyderClientSettings.Parse(connectionString), logger)
    {
    }

    /// <summary>The settings.</summary>
    public HyderClientSettings Settings { get; }

    /// <summary>
    /// The highest ordinal this client has seen committed or read at: sent as each request's
    /// <c>min_ordinal</c> while <see cref="HyderClientSettings.ReadYourWrites"/> is on
    /// (docs/api.md, "Read your writes"). <see cref="HyderClientSettings.Session"/>'s when given.
    /// </summary>
    public HyderSession Session { get; }

    internal Api.V1.Hyder.HyderClient Stub { get; }

    /// <summary>The <c>min_ordinal</c> of the next request: the session's ordinal, or 0 with <see cref="HyderClientSettings.ReadYourWrites"/> off.</summary>
    internal long MinOrdinal => Settings.ReadYourWrites ? Session.Ordinal : 0;

    /// <summary>Raises the session to what an outcome shows: its ordinal (committed, aborted or unknown) and the snapshot it read.</summary>
    internal void Observe(V1.Outcome? outcome)
    {
        if (outcome is not null)
        {
            Session.Observe(Math.Max(outcome.Ordinal, outcome.SnapshotSequence));
        }
    }

    internal ILogger Logger => _logger;

    /// <summary>The metadata every call carries (the API key), or null.</summary>
    internal Metadata? Headers => _headers;

    /// <summary>
    /// Runs a one-shot transaction: the operations in order on one snapshot, then commit. Does not
    /// retry; see <see cref="ReadWriteAsync(Func{HyderTransaction, Task}, IsolationLevel, CancellationToken)"/>.
    /// </summary>
    /// <param name="isolation">The isolation level.</param>
    /// <param name="operations">The operations (at least one).</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The commit, with one result per operation.</returns>
    /// <exception cref="TransactionAbortedException">It aborted; nothing was applied.</exception>
    /// <remarks>
    /// <para>
    /// The request refers to the operations' key and value arrays rather than copying them: they
    /// are read while the call runs (when the request is sent, and again if a read-only call is
    /// retried), so they must not change until the returned task completes.
    /// </para>
    /// <para>
    /// With <see cref="HyderClientSettings.Multiplex"/>, the transaction travels on the client's
    /// shared <c>ExecuteStream</c> call (a request over half of
    /// <see cref="HyderClientSettings.MaxMessageBytes"/> goes as a unary call instead). Cancelling
    /// it abandons its answer: the server may still run it, and a write may commit, as with a
    /// cancelled unary call. A writing transaction whose stream breaks after it was sent throws
    /// <see cref="TransactionOutcomeUnknownException"/>.
    /// </para>
    /// </remarks>
    public async Task<CommitResult> ExecuteAsync(IsolationLevel isolation, IEnumerable<HyderOperation> operations, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operations);
        var request = new V1.ExecuteRequest { Isolation = Wire.ToMessage(isolation), MinOrdinal = MinOrdinal };
        if (operations.TryGetNonEnumeratedCount(out var count))
        {
            request.Operations.Capacity = count;
        }

        var readOnly = true;
        long bytes = 0;
        foreach (var operation in operations)
        {
            var message = Wire.ToMessage(operation, borrow: true);
            readOnly &= message.Kind is V1.OperationKind.Get or V1.OperationKind.Scan;
            bytes += message.Key.Length + message.Value.Length + message.End.Length + 32;
            request.Operations.Add(message);
        }

        // A message over the limit would end the whole shared stream (with every answer on it), so
        // a large transaction goes alone.
        var response = _multiplexer is { } multiplexer && bytes <= Settings.MaxMessageBytes / 2
            ? await multiplexer.ExecuteAsync(request, readOnly, cancellationToken).ConfigureAwait(false)
            : await UnaryAsync((r, o) => Stub.ExecuteAsync(r, o), request, retry: readOnly, cancellationToken).ConfigureAwait(false);
        CountOutcome(response.Outcome);
        Observe(response.Outcome);
        Wire.EnsureCommitted(response.Outcome);
        return new CommitResult(response.Outcome.Ordinal, response.Outcome.SnapshotSequence, response.Results.Select(Wire.FromMessage).ToArray());
    }

    /// <summary>Reads several keys on one snapshot (read-only: never aborts, never reaches the log).</summary>
    /// <param name="keys">The keys (at least one, none empty).</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>One value per key in order; null where the key is absent.</returns>
    public async Task<IReadOnlyList<byte[]?>> ReadAsync(IEnumerable<byte[]> keys, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(keys);
        var request = new V1.ReadRequest { MinOrdinal = MinOrdinal };
        foreach (var key in keys)
        {
            request.Keys.Add(Wire.Bytes(key));
        }

        var response = await UnaryAsync((r, o) => Stub.ReadAsync(r, o), request, retry: true, cancellationToken).ConfigureAwait(false);
        Session.Observe(response.SnapshotSequence);
        return response.Results.Select(r => r.Found ? Wire.Take(r.Value) : null).ToArray();
    }

    /// <summary>
    /// Scans keys in [<paramref name="low"/>, <paramref name="high"/>) on one snapshot, in ascending
    /// order, streamed in batches (the deadline covers the whole scan).
    /// </summary>
    /// <param name="low">Inclusive low bound (null: unbounded).</param>
    /// <param name="high">Exclusive high bound (null: unbounded).</param>
    /// <param name="limit">Most rows (0: no limit).</param>
    /// <param name="cancellationToken">Cancels the scan.</param>
    /// <returns>The rows.</returns>
    public async IAsyncEnumerable<KeyValuePair<byte[], byte[]>> ScanAsync(byte[]? low, byte[]? high, int limit = 0, [EnumeratorCancellation] CancellationToken cancellationToken = default)
    {
        var request = new V1.ScanRequest { Low = Wire.Bytes(low), High = Wire.Bytes(high), Limit = limit, MinOrdinal = MinOrdinal };
        for (var attempt = 0; ; attempt++)
        {
            var received = false;
            using (var call = Stub.Scan(request, Options(cancellationToken)))
            {
                while (true)
                {
                    V1.ScanResponse batch;
                    try
                    {
                        if (!await call.ResponseStream.MoveNext(cancellationToken).ConfigureAwait(false))
                        {
                            yield break;
                        }

                        batch = call.ResponseStream.Current;
                    }
                    catch (RpcException e) when (!received && Retryable(e, attempt, cancellationToken))
                    {
                        break;
                    }
                    catch (RpcException e)
                    {
                        throw Wire.Translate(e, cancellationToken);
                    }

                    received = true;
                    foreach (var row in batch.Rows)
                    {
                        yield return new(Wire.Take(row.Key), Wire.Take(row.Value));
                    }
                }
            }

            await BackoffAsync(attempt, cancellationToken).ConfigureAwait(false);
        }
    }

    /// <summary>Starts an interactive transaction (a bidirectional stream; see <see cref="HyderTransaction"/>).</summary>
    /// <param name="isolation">The isolation level.</param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <returns>The transaction; dispose it (which aborts it unless committed).</returns>
    public Task<HyderTransaction> BeginAsync(IsolationLevel isolation = IsolationLevel.Serializable, CancellationToken cancellationToken = default) =>
        HyderTransaction.BeginAsync(this, isolation, cancellationToken);

    /// <summary>
    /// Starts an interactive transaction without a round trip of its own: the begin waits, unsent,
    /// for the first operation and travels with it (in one batch message when the operations are
    /// issued in a <see cref="HyderTransaction.Batch"/> scope). An 8-read, 2-write transaction is
    /// then two round trips instead of three (docs/api.md, "Pipelining").
    /// </summary>
    /// <remarks>
    /// Unlike <see cref="BeginAsync"/>, a begin the server refuses is not retried on a new stream:
    /// the operations sent with it fail with its error (UNAVAILABLE while the server lags behind
    /// the session's ordinal or is not serving; a transaction that fails so has applied nothing and
    /// may be run again). <see cref="HyderTransaction.SnapshotSequence"/> is 0 until the begin's
    /// answer has come, which is before the first operation completes.
    /// </remarks>
    /// <param name="isolation">The isolation level.</param>
    /// <returns>The transaction; dispose it (which aborts it unless committed).</returns>
    public HyderTransaction BeginPipelined(IsolationLevel isolation = IsolationLevel.Serializable) =>
        HyderTransaction.BeginPipelined(this, isolation);

    /// <summary>The server's view of the cluster.</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The status.</returns>
    public async Task<HyderClusterStatus> GetStatusAsync(CancellationToken cancellationToken = default)
    {
        var r = await UnaryAsync((r, o) => Stub.StatusAsync(r, o), new V1.StatusRequest(), retry: true, cancellationToken).ConfigureAwait(false);
        return new HyderClusterStatus(r.ServerId, r.LastMelded, r.CommittedSequence, r.InFlight, r.Committed, r.Aborted, r.Pipeline, r.Peers.ToArray())
        {
            Gen2Collections = r.Gen2Collections,
            ManagedHeapBytes = r.ManagedHeapBytes,
            WorkingSetBytes = r.WorkingSetBytes,
        };
    }

    /// <summary>A hash of the last committed state, once the server melded at least <paramref name="atLeastOrdinal"/>.</summary>
    /// <param name="atLeastOrdinal">The ordinal to wait for (0: none); the wait ends at the deadline.</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The hash.</returns>
    public async Task<HyderStateHash> GetStateHashAsync(long atLeastOrdinal = 0, CancellationToken cancellationToken = default)
    {
        var r = await UnaryAsync((r, o) => Stub.StateHashAsync(r, o), new V1.StateHashRequest { AtLeastOrdinal = atLeastOrdinal }, retry: true, cancellationToken).ConfigureAwait(false);
        return new HyderStateHash(r.Ordinal, r.Sequence, r.Hash);
    }

    /// <summary>Asks the server to write a checkpoint (admin).</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The ordinal the checkpoint restarts after.</returns>
    public async Task<long> CheckpointAsync(CancellationToken cancellationToken = default) =>
        (await UnaryAsync((r, o) => Stub.CheckpointAsync(r, o), new V1.CheckpointRequest(), retry: false, cancellationToken).ConfigureAwait(false)).Ordinal;

    /// <summary>Asks the server to trim the shared log now by the trim rule (admin; docs/server.md, "Trimming the log").</summary>
    /// <param name="keepCheckpoints">Keep the latest this many self-contained checkpoints (at least 1).</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The position the log is trimmed below.</returns>
    public async Task<long> TrimAsync(int keepCheckpoints = 1, CancellationToken cancellationToken = default) =>
        (await UnaryAsync((r, o) => Stub.TrimAsync(r, o), new V1.TrimRequest { KeepCheckpoints = keepCheckpoints }, retry: false, cancellationToken).ConfigureAwait(false)).TrimmedBelow;

    /// <summary>Ends the shared <c>ExecuteStream</c> call (<see cref="HyderClientSettings.Multiplex"/>) and closes the connections of the client's own channel (not those of a stub it was given).</summary>
    /// <returns>A task that completes when the client is closed.</returns>
    public async ValueTask DisposeAsync()
    {
        Volatile.Write(ref _disposed, true);
        var ending = new List<Task>();
        while (_idleTransacts.TryPop(out var idle))
        {
            ending.Add(EndIdleTransactAsync(idle.Call));
        }

        await Task.WhenAll(ending).ConfigureAwait(false);
        if (_multiplexer is not null)
        {
            await _multiplexer.DisposeAsync().ConfigureAwait(false);
        }

        _channel?.Dispose();
    }

    /// <summary>The HTTP/2 handler of a channel to the server: TLS trust and client certificate from the settings.</summary>
    /// <param name="settings">The settings.</param>
    /// <returns>The handler.</returns>
    public static SocketsHttpHandler CreateHandler(HyderClientSettings settings)
    {
        ArgumentNullException.ThrowIfNull(settings);
        var handler = new SocketsHttpHandler
        {
            EnableMultipleHttp2Connections = true,
            ConnectTimeout = TimeSpan.FromSeconds(10),
            PooledConnectionIdleTimeout = Timeout.InfiniteTimeSpan,
            KeepAlivePingDelay = TimeSpan.FromSeconds(60),
            KeepAlivePingTimeout = TimeSpan.FromSeconds(30),
        };
        if (settings.TrustedCertificateAuthorities is { } authorities)
        {
            handler.SslOptions.RemoteCertificateValidationCallback = (_, certificate, chain, errors) =>
                certificate is X509Certificate2 server
                && (errors & ~SslPolicyErrors.RemoteCertificateChainErrors) == SslPolicyErrors.None // the name must match
                && RpcTls.IsTrusted(server, chain, authorities, RpcTls.ServerAuthOid);
        }

        if (settings.ClientCertificate is { } client)
        {
            handler.SslOptions.ClientCertificates = [client];
            handler.SslOptions.LocalCertificateSelectionCallback = (_, _, _, _, _) => client;
        }

        return handler;
    }

    /// <summary>The channel options of the settings: message size caps and the handler.</summary>
    internal static GrpcChannelOptions ChannelOptions(HyderClientSettings settings, HttpMessageHandler handler) => new()
    {
        HttpHandler = handler,
        DisposeHttpClient = true,
        MaxReceiveMessageSize = settings.MaxMessageBytes,
        MaxSendMessageSize = settings.MaxMessageBytes,
    };

    internal CallOptions Options(CancellationToken cancellationToken) =>
        new(_headers, Settings.Timeout is { } timeout ? DateTime.UtcNow + timeout : null, cancellationToken);

    /// <summary>
    /// The longest a <c>Transact</c> call is kept idle for reuse; the server waits 10 s after an
    /// outcome for the next begin, so a call taken within this has not been ended by the server
    /// for idleness (a server that stops ends idle calls at once: see <see cref="HyderTransaction"/>).
    /// </summary>
    internal TimeSpan IdleTransactLimit { get; set; } = TimeSpan.FromSeconds(2);

    /// <summary>Idle <c>Transact</c> calls kept at most; more are ended.</summary>
    internal const int MaxIdleTransacts = 256;

    /// <summary>Idle <c>Transact</c> calls kept now (for tests).</summary>
    internal int IdleTransacts => _idleTransacts.Count;

    /// <summary>
    /// A <c>Transact</c> call for a pipelined transaction: an idle one an earlier transaction ended
    /// cleanly on (reused: true), or a new one. Neither has a deadline: the transaction keeps its own.
    /// </summary>
    internal (AsyncDuplexStreamingCall<Api.V1.TransactRequest, Api.V1.TransactResponse> Call, bool Reused) RentTransact()
    {
        while (_idleTransacts.TryPop(out var idle))
        {
            if (Stopwatch.GetElapsedTime(idle.Since) < IdleTransactLimit)
            {
                return (idle.Call, true);
            }

            _ = EndIdleTransactAsync(idle.Call);
        }

        return (Stub.Transact(new CallOptions(_headers, null, CancellationToken.None)), false);
    }

    /// <summary>Keeps a call whose transaction ended cleanly (its outcome read, nothing pending) for the next one.</summary>
    internal void ReturnTransact(AsyncDuplexStreamingCall<Api.V1.TransactRequest, Api.V1.TransactResponse> call)
    {
        if (Volatile.Read(ref _disposed) || _idleTransacts.Count >= MaxIdleTransacts)
        {
            _ = EndIdleTransactAsync(call);
            return;
        }

        _idleTransacts.Push((call, Stopwatch.GetTimestamp()));
        if (Volatile.Read(ref _disposed) && _idleTransacts.TryPop(out var late))
        {
            // The client was disposed while this one was being returned.
            _ = EndIdleTransactAsync(late.Call);
        }
    }

    /// <summary>Ends an idle call as a transaction's call ends (no reset), then disposes it.</summary>
    private static async Task EndIdleTransactAsync(AsyncDuplexStreamingCall<Api.V1.TransactRequest, Api.V1.TransactResponse> call)
    {
        try
        {
            await HyderTransaction.EndStreamAsync(call, requestsEnded: false).ConfigureAwait(false);
        }
        finally
        {
            call.Dispose();
        }
    }

    /// <summary>Whether a failed attempt may run again: UNAVAILABLE, retries left, and the caller still waiting.</summary>
    internal bool Retryable(RpcException e, int attempt, CancellationToken cancellationToken)
    {
        if (e.StatusCode != StatusCode.Unavailable || attempt >= Settings.MaxRetries || cancellationToken.IsCancellationRequested)
        {
            return false;
        }

        Log.RetryingUnavailable(_logger, e.Status.Detail, attempt + 1, Settings.MaxRetries);
        return true;
    }

    internal Task BackoffAsync(int attempt, CancellationToken cancellationToken) => Task.Delay(Backoff(attempt), cancellationToken);

    internal static void CountOutcome(V1.Outcome? outcome)
    {
        if (outcome?.Status == V1.TransactionStatus.Committed)
        {
            s_commits.Add(1);
        }
        else if (outcome?.Status == V1.TransactionStatus.Aborted)
        {
            s_aborts.Add(1);
        }
    }

    private async Task<TResponse> UnaryAsync<TRequest, TResponse>(Func<TRequest, CallOptions, AsyncUnaryCall<TResponse>> start, TRequest request, bool retry, CancellationToken cancellationToken)
    {
        for (var attempt = 0; ; attempt++)
        {
            using var call = start(request, Options(cancellationToken));
            try
            {
                return await call.ResponseAsync.ConfigureAwait(false);
            }
            catch (RpcException e) when (retry && Retryable(e, attempt, cancellationToken))
            {
            }
            catch (RpcException e)
            {
                throw Wire.Translate(e, cancellationToken);
            }

            await BackoffAsync(attempt, cancellationToken).ConfigureAwait(false);
        }
    }
}
