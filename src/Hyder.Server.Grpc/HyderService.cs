using Grpc.Core;
using Hyder.Security;
using Hyder.Server.Engine;
using Microsoft.Extensions.DependencyInjection;
using Microsoft.Extensions.Hosting;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;
using V1 = Hyder.Api.V1;
using TreeIsolation = Hyder.Tree.IsolationLevel;

namespace Hyder.Server.Grpc;

/// <summary>
/// The <c>hyder.v1.Hyder</c> service over an <see cref="ITransactionEngine"/>: the one implementation
/// of the generated <see cref="V1.Hyder.HyderBase"/>, hosted by Grpc.AspNetCore. It checks each
/// request against the engine's limits, maps it to engine calls and maps the answers back.
/// </summary>
/// <remarks>
/// Refusals are <see cref="EngineException"/>s: the engine's own, and
/// <see cref="EngineErrorCode.InvalidArgument"/> with a reason for malformed requests, thrown before
/// anything is applied; <see cref="HyderInterceptor"/> maps them to statuses, authenticates the
/// caller and checks each method's role (<see cref="HyderAccess"/>). The writes inside Execute and
/// Transact are checked here, per operation, against the caller's role.
/// </remarks>
public sealed partial class HyderService : V1.Hyder.HyderBase
{
    /// <summary>Rows per scan response when the request leaves the batch size to the server.</summary>
    public const int DefaultScanBatchRows = 256;

    /// <summary>The default of <see cref="MaxTransactionsPerStream"/>.</summary>
    public const int DefaultMaxTransactionsPerStream = 128;

    private readonly ITransactionEngine _engine;
    private readonly EngineLimits _limits;
    private readonly CancellationToken _stopping;
    private readonly ILogger _logger;

    /// <summary>Creates the service over an engine.</summary>
    /// <param name="engine">The engine requests go to.</param>
    public HyderService(ITransactionEngine engine)
        : this(engine, null)
    {
    }

    /// <summary>Creates the service over an engine in a host whose stop ends the <c>ExecuteStream</c> calls.</summary>
    /// <param name="engine">The engine requests go to.</param>
    /// <param name="lifetime">The host: when it starts stopping, each <c>ExecuteStream</c> call stops reading, answers what it read and ends with UNAVAILABLE. Null: the calls end only with their connections.</param>
    /// <param name="logger">Where unexpected failures of single <c>ExecuteStream</c> transactions go; none when null.</param>
    [ActivatorUtilitiesConstructor]
    public HyderService(ITransactionEngine engine, IHostApplicationLifetime? lifetime, ILogger<HyderService>? logger = null)
    {
        ArgumentNullException.ThrowIfNull(engine);
        _engine = engine;
        _limits = engine.Limits;
        _stopping = lifetime?.ApplicationStopping ?? CancellationToken.None;
        _logger = logger ?? (ILogger)NullLogger.Instance;
    }

    /// <summary>The limits requests are checked against (the engine's).</summary>
    public EngineLimits Limits => _limits;

    /// <summary>Transactions in flight on one <c>ExecuteStream</c> call, at most (<see cref="GrpcServerLimits.MaxTransactionsPerStream"/>).</summary>
    public int MaxTransactionsPerStream { get; init; } = DefaultMaxTransactionsPerStream;

    internal ITransactionEngine Engine => _engine;

    internal ILogger Logger => _logger;

    /// <summary>Runs a one-shot transaction.</summary>
    /// <param name="request">The isolation level and the operations.</param>
    /// <param name="context">The call.</param>
    /// <returns>The outcome, with one result per operation when committed.</returns>
    public override async Task<V1.ExecuteResponse> Execute(V1.ExecuteRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        var (isolation, operations) = CheckOneShot(HyderInterceptor.Caller(context), request);
        await MeldedAtLeastAsync(request.MinOrdinal, cancellationToken).ConfigureAwait(false);
        var outcome = await _engine.ExecuteAsync(isolation, operations, cancellationToken).ConfigureAwait(false);
        ReleaseAfterResponse(context, outcome);
        var response = new V1.ExecuteResponse { Outcome = Messages.ToMessage(outcome) };
        if (outcome.Status == TransactionStatus.Committed)
        {
            var results = outcome.Results;
            response.Results.Capacity = results.Count;
            for (var i = 0; i < results.Count; i++)
            {
                response.Results.Add(Messages.ToMessage(results[i]));
            }
        }

        return response;
    }

    /// <summary>
    /// The response wraps the outcome's values without copying them; with recycled values they are
    /// lent (docs/value-storage.md), so the outcome is disposed when the request ends, after
    /// Grpc.AspNetCore has written the response.
    /// </summary>
    private static void ReleaseAfterResponse(ServerCallContext context, TransactionOutcome outcome)
    {
        if (outcome.HoldsSnapshot)
        {
            context.GetHttpContext().Response.RegisterForDispose(outcome);
        }
    }

    /// <summary>Reads several keys on one snapshot (a read-only transaction: it never reaches the log).</summary>
    /// <param name="request">The keys.</param>
    /// <param name="context">The call.</param>
    /// <returns>The snapshot read and one result per key, in order.</returns>
    public override async Task<V1.ReadResponse> Read(V1.ReadRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        if (request.Keys.Count == 0)
        {
            throw Messages.Invalid("keys is empty; a read needs at least one key");
        }

        if (request.Keys.Count > _limits.MaxOperations)
        {
            throw Messages.Invalid($"{request.Keys.Count} keys exceed the limit of {_limits.MaxOperations}");
        }

        var operations = new Operation[request.Keys.Count];
        for (var i = 0; i < operations.Length; i++)
        {
            operations[i] = Operation.Get(Messages.Key(request.Keys[i], _limits, new Messages.Field("keys", i)));
        }

        await MeldedAtLeastAsync(request.MinOrdinal, cancellationToken).ConfigureAwait(false);

        var outcome = await _engine.ExecuteAsync(TreeIsolation.SnapshotIsolation, operations, cancellationToken).ConfigureAwait(false);
        ReleaseAfterResponse(context, outcome);
        if (outcome.Status != TransactionStatus.Committed)
        {
            // A read-only transaction commits on its snapshot; anything else is the server's problem.
            throw new EngineException(EngineErrorCode.Unavailable, $"the snapshot read did not complete: {outcome.Detail}");
        }

        var response = new V1.ReadResponse { SnapshotSequence = outcome.SnapshotSequence };
        response.Results.Capacity = outcome.Results.Count;
        foreach (var result in outcome.Results)
        {
            response.Results.Add(Messages.ToMessage(result));
        }

        return response;
    }

    /// <summary>The server's view of the cluster.</summary>
    /// <param name="request">Nothing.</param>
    /// <param name="context">The call.</param>
    /// <returns>The status.</returns>
    public override async Task<V1.StatusResponse> Status(V1.StatusRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        var status = await _engine.GetStatusAsync(cancellationToken).ConfigureAwait(false);
        var response = new V1.StatusResponse
        {
            ServerId = status.ServerId,
            LastMelded = status.LastMelded,
            CommittedSequence = status.CommittedSequence,
            InFlight = status.InFlight,
            Committed = status.Committed,
            Aborted = status.Aborted,
            Pipeline = status.Pipeline,
            Gen2Collections = GC.CollectionCount(2),
            ManagedHeapBytes = GC.GetTotalMemory(forceFullCollection: false),
            WorkingSetBytes = Environment.WorkingSet,
        };
        response.Peers.Add(status.Peers);
        return response;
    }

    /// <summary>A hash of the last committed state, once the server melded at least the given ordinal.</summary>
    /// <param name="request">The ordinal to wait for (0: none).</param>
    /// <param name="context">The call; the wait ends with its deadline.</param>
    /// <returns>The hash and the state it is of.</returns>
    public override async Task<V1.StateHashResponse> StateHash(V1.StateHashRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        if (request.AtLeastOrdinal < 0)
        {
            throw Messages.Invalid($"at_least_ordinal is negative ({request.AtLeastOrdinal})");
        }

        var hash = await _engine.GetStateHashAsync(request.AtLeastOrdinal, cancellationToken).ConfigureAwait(false);
        return new V1.StateHashResponse { Ordinal = hash.Ordinal, Sequence = hash.Sequence, Hash = hash.Hash };
    }

    /// <summary>Writes a checkpoint.</summary>
    /// <param name="request">Nothing.</param>
    /// <param name="context">The call.</param>
    /// <returns>The ordinal the checkpoint restarts after.</returns>
    public override async Task<V1.CheckpointResponse> Checkpoint(V1.CheckpointRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        var cancellationToken = context.CancellationToken;
        var ordinal = await _engine.CheckpointAsync(cancellationToken).ConfigureAwait(false);
        return new V1.CheckpointResponse { Ordinal = ordinal };
    }

    /// <summary>Trims the shared log now by the trim rule (admin).</summary>
    /// <param name="request">How many of the latest checkpoints to keep (0: 1).</param>
    /// <param name="context">The call.</param>
    /// <returns>The position the log is trimmed below.</returns>
    public override async Task<V1.TrimResponse> Trim(V1.TrimRequest request, ServerCallContext context)
    {
        ArgumentNullException.ThrowIfNull(request);
        ArgumentNullException.ThrowIfNull(context);
        if (request.KeepCheckpoints is < 0 or > ITransactionEngine.MaxTrimKeepCheckpoints)
        {
            throw Messages.Invalid($"keep_checkpoints is {request.KeepCheckpoints}; it must be 1 to {ITransactionEngine.MaxTrimKeepCheckpoints} (0: 1)");
        }

        var mark = await _engine.TrimLogAsync(Math.Max(1, request.KeepCheckpoints), context.CancellationToken).ConfigureAwait(false);
        return new V1.TrimResponse { TrimmedBelow = mark };
    }

    /// <summary>
    /// A one-shot transaction's request, checked and mapped as <see cref="Execute"/> and
    /// <see cref="ExecuteStream"/> both run it: the caller's role against every write, then the
    /// isolation level and the operations within the limits.
    /// </summary>
    internal (TreeIsolation Isolation, IReadOnlyList<Operation> Operations) CheckOneShot(CallerIdentity caller, V1.ExecuteRequest request)
    {
        foreach (var operation in request.Operations)
        {
            CheckWrite(caller, operation);
        }

        return (Messages.ToEngine(request.Isolation), Messages.ToEngine(request.Operations, _limits));
    }

    /// <summary>PERMISSION_DENIED for a write by a caller below the writer role.</summary>
    private static void CheckWrite(CallerIdentity caller, V1.Operation operation)
    {
        if (caller.Role < ClientRole.Writer && HyderAccess.IsWrite(operation))
        {
            throw new RpcException(new Status(StatusCode.PermissionDenied, $"{caller.Name} ({ClientRoles.Name(caller.Role)}) may only read: a {operation.Kind} needs the writer role."));
        }
    }
}
