using System.Diagnostics.Metrics;
using System.Runtime.CompilerServices;
using Hyder.Api;
using Hyder.Rpc;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using V1 = Hyder.Api.V1;

namespace Hyder.Client;

/// <summary>
/// A client of one Hyder server over gRPC. Thread-safe: share one per server and process; calls
/// multiplex over HTTP/2 connections.
/// </summary>
/// <remarks>
/// Failures surface as <see cref="TransactionAbortedException"/> (the transaction aborted; retry),
/// <see cref="TransactionOutcomeUnknownException"/>, <see cref="HyderException"/> with the gRPC
/// status code for everything else, and <see cref="OperationCanceledException"/> when the caller's
/// token cancels a call.
/// </remarks>
public sealed partial class HyderClient : IAsyncDisposable
{
    /// <summary>The name of the client's <see cref="Meter"/>.</summary>
    public const string MeterName = "Hyder.Client";

    private static readonly Meter s_meter = new(MeterName);
    private static readonly Counter<long> s_commits = s_meter.CreateCounter<long>("hyder.client.commits", description: "Transactions committed.");
    private static readonly Counter<long> s_aborts = s_meter.CreateCounter<long>("hyder.client.aborts", description: "Transactions aborted.");
    private static readonly Counter<long> s_retries = s_meter.CreateCounter<long>("hyder.client.retries", description: "Aborted transactions run again by the retry helper.");

    private readonly RpcChannel _channel;
    private readonly ILogger _logger;

    /// <summary>Creates a client.</summary>
    /// <param name="settings">Where the server is and how to call it.</param>
    /// <param name="logger">Where retries and failures are logged; none when null.</param>
    public HyderClient(HyderClientSettings settings, ILogger? logger = null)
    {
        ArgumentNullException.ThrowIfNull(settings);
        Settings = settings;
        _logger = logger ?? NullLogger.Instance;
        _channel = new RpcChannel(settings.Endpoint, new RpcChannelOptions
        {
            MaxReceiveMessageSize = settings.MaxMessageBytes,
            MaxSendMessageSize = settings.MaxMessageBytes,
            TrustedCertificateAuthorities = settings.TrustedCertificateAuthorities,
            ClientCertificate = settings.ClientCertificate,
            BearerToken = settings.Token,
        });
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

    internal RpcChannel Channel => _channel;

    internal ILogger Logger => _logger;

    /// <summary>
    /// Runs a one-shot transaction: the operations in order on one snapshot, then commit. Does not
    /// retry; see <see cref="ReadWriteAsync(Func{HyderTransaction, Task}, IsolationLevel, CancellationToken)"/>.
    /// </summary>
    /// <param name="isolation">The isolation level.</param>
    /// <param name="operations">The operations (at least one).</param>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The commit, with one result per operation.</returns>
    /// <exception cref="TransactionAbortedException">It aborted; nothing was applied.</exception>
    public async Task<CommitResult> ExecuteAsync(IsolationLevel isolation, IEnumerable<HyderOperation> operations, CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(operations);
        var request = new V1.ExecuteRequest { Isolation = Wire.ToMessage(isolation) };
        foreach (var operation in operations)
        {
            request.Operations.Add(Wire.ToMessage(operation));
        }

        var response = await UnaryAsync(HyderMethods.Execute, request, cancellationToken).ConfigureAwait(false);
        CountOutcome(response.Outcome);
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
        var request = new V1.ReadRequest();
        foreach (var key in keys)
        {
            request.Keys.Add(Wire.Bytes(key));
        }

        var response = await UnaryAsync(HyderMethods.Read, request, cancellationToken).ConfigureAwait(false);
        return response.Results.Select(r => r.Found ? r.Value.ToByteArray() : null).ToArray();
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
        var request = new V1.ScanRequest { Low = Wire.Bytes(low), High = Wire.Bytes(high), Limit = limit };
        using var call = _channel.ServerStreamingCall(HyderMethods.Scan, request, Options(cancellationToken));
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
            catch (RpcException e)
            {
                throw Wire.Translate(e, cancellationToken);
            }

            foreach (var row in batch.Rows)
            {
                yield return new(row.Key.ToByteArray(), row.Value.ToByteArray());
            }
        }
    }

    /// <summary>Starts an interactive transaction (a bidirectional stream; see <see cref="HyderTransaction"/>).</summary>
    /// <param name="isolation">The isolation level.</param>
    /// <param name="cancellationToken">Cancels the start.</param>
    /// <returns>The transaction; dispose it (which aborts it unless committed).</returns>
    public Task<HyderTransaction> BeginAsync(IsolationLevel isolation = IsolationLevel.Serializable, CancellationToken cancellationToken = default) =>
        HyderTransaction.BeginAsync(this, isolation, cancellationToken);

    /// <summary>The server's view of the cluster.</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The status.</returns>
    public async Task<HyderClusterStatus> GetStatusAsync(CancellationToken cancellationToken = default)
    {
        var r = await UnaryAsync(HyderMethods.Status, new V1.StatusRequest(), cancellationToken).ConfigureAwait(false);
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
        var r = await UnaryAsync(HyderMethods.StateHash, new V1.StateHashRequest { AtLeastOrdinal = atLeastOrdinal }, cancellationToken).ConfigureAwait(false);
        return new HyderStateHash(r.Ordinal, r.Sequence, r.Hash);
    }

    /// <summary>Asks the server to write a checkpoint (admin).</summary>
    /// <param name="cancellationToken">Cancels the call.</param>
    /// <returns>The ordinal the checkpoint restarts after.</returns>
    public async Task<long> CheckpointAsync(CancellationToken cancellationToken = default) =>
        (await UnaryAsync(HyderMethods.Checkpoint, new V1.CheckpointRequest(), cancellationToken).ConfigureAwait(false)).Ordinal;

    /// <summary>Closes the connections.</summary>
    /// <returns>A completed task.</returns>
    public ValueTask DisposeAsync()
    {
        _channel.Dispose();
        return ValueTask.CompletedTask;
    }

    internal CallOptions Options(CancellationToken cancellationToken) =>
        new(Deadline: Settings.Timeout is { } timeout ? DateTime.UtcNow + timeout : null, CancellationToken: cancellationToken);

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

    private async Task<TResponse> UnaryAsync<TRequest, TResponse>(Method<TRequest, TResponse> method, TRequest request, CancellationToken cancellationToken)
        where TRequest : class, Google.Protobuf.IMessage<TRequest>
        where TResponse : class, Google.Protobuf.IMessage<TResponse>
    {
        using var call = _channel.UnaryCall(method, request, Options(cancellationToken));
        try
        {
            return await call.ResponseAsync.ConfigureAwait(false);
        }
        catch (RpcException e)
        {
            throw Wire.Translate(e, cancellationToken);
        }
    }
}
