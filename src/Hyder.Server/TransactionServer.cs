using System.Collections.Concurrent;
using Hyder.Doppel;
using Hyder.Log;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Server.Engine;
using Hyder.Server.Follower;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;
using Hyder.Tree.Pipeline;
using Microsoft.Extensions.Logging;
using Microsoft.Extensions.Logging.Abstractions;

namespace Hyder.Server;

/// <summary>
/// A Hyder transaction server (Hyder II §3-§5): its log follower (<see cref="LogFollower"/>) reads
/// the shared log (or its peers' broadcasts), deserializes intentions on n threads and hands them
/// to the premeld / group meld / final meld pipeline; the server runs clients' transactions on the
/// last committed state, appending their intentions and learning their outcomes from its own final
/// meld, and writes checkpoints and trims the log.
/// </summary>
/// <remarks>
/// <para>Threads: the follower's (the log reader, an async loop; n deserializer threads; one
/// submitter that hands ordinals to the pipeline in log order), the pipeline's stage threads, and
/// the callers' threads for execution. Every server of a cluster computes the same states, byte
/// for byte.</para>
/// <para>Rules every server applies alike, from the log only: an intention whose snapshot is more
/// than W ordinals behind is aborted (<see cref="AbortCause.SnapshotTooOld"/>); one whose snapshot
/// precedes the last checkpoint barrier before it is aborted
/// (<see cref="AbortCause.SnapshotBeforeCheckpoint"/>); a second copy of an intention (the same
/// nonce as one of the last W + 2 ordinals: a retried append) is rejected, since its first copy
/// decided it; a block that does not decode is rejected with the decoder's reason.</para>
/// </remarks>
public sealed partial class TransactionServer : ITransactionEngine, IAsyncDisposable, IFollowerHost
{
    private readonly ISharedLog _log;
    private readonly ServerOptions _options;
    private readonly ClusterSettings _settings;
    private readonly ILogger _logger;
    private readonly IIntentionBroadcast? _broadcast;
    private readonly Database _db;
    private readonly ThreadedPipeline _pipeline;

    /// <summary>The log side: reader, deserializers, submitter, and the rules every server applies from the log alone.</summary>
    private readonly LogFollower _follower;
    private readonly SemaphoreSlim _admission;
    private readonly CancellationTokenSource _stop = new();
    private readonly NonceTable _localByNonce;

    /// <summary>
    /// This server's transactions by ordinal, from their submit to their final meld: a ring of
    /// twice the pipeline's window (the submitter files ordinal v only after v − window was
    /// melded, so a slot is always free), read and cleared by final meld without a lock.
    /// </summary>
    private readonly PendingTransaction?[] _localByOrdinal;
    private readonly ConcurrentDictionary<ulong, CheckpointRequest> _checkpointRequests = new();
    private readonly ServerMetrics _metrics;
    private readonly ExecutorPools _executorPools;
    private readonly TimeProvider _time;
    private readonly bool _cooperative;

    /// <summary>Cooperative mode: outcomes melded during the current submit, delivered after it returns.</summary>
    private readonly List<(PendingTransaction Pending, MeldOutcome Outcome)> _melded = [];
    private readonly long _settingsPosition;

    /// <summary>How commutative operations run: the cluster's Doppel setting (docs/doppel.md).</summary>
    private readonly Tree.Commutative.CommutativeMode _commutativeMode;

    /// <summary>The last state after which this server asked for a phase end with a filler.</summary>
    private long _phaseEndRequested = -1;

    private Task _maintenance = Task.CompletedTask;
    private int _disposed;

    private TransactionServer(
        ISharedLog log,
        ServerOptions options,
        ClusterSettings settings,
        long settingsPosition,
        Database db,
        StageSequences? sequences,
        long readFrom,
        long lastBarrier,
        long lastBarrierPosition,
        IIntentionBroadcast? broadcast,
        ILogger logger)
    {
        _log = log;
        _options = options;
        _settings = settings;
        _settingsPosition = settingsPosition;
        _commutativeMode = settings.CommutativeOperations ? Tree.Commutative.CommutativeMode.Operations : Tree.Commutative.CommutativeMode.ReadModifyWrite;
        _logger = logger;
        _time = options.TimeProvider ?? TimeProvider.System;
        _cooperative = options.Cooperative;
        _broadcast = broadcast;
        _db = db;
        _admission = new SemaphoreSlim(options.MaxInFlight, options.MaxInFlight);
        _localByNonce = new NonceTable(Math.Min(options.MaxInFlight, 4096));
        _localByOrdinal = new PendingTransaction?[2 * options.PipelineWindow];
        _metrics = new ServerMetrics(this);
        _executorPools = new ExecutorPools(db.MeldPool.Exchange, Math.Min(options.MaxInFlight, 256) + Environment.ProcessorCount);
        _pipeline = new ThreadedPipeline(db, settings.Pipeline, new PipelineRuntime
        {
            Window = options.PipelineWindow,
            Delay = options.StageDelay,
            Melded = OnMelded,
            StartSequences = sequences,
            RequireValidated = true,
            Threading = options.Cooperative ? new PipelineThreading { Cooperative = true } : options.Threading,
        });
        _ordinalWaiters = new OrdinalWaiters(_pipeline.LastMelded, asynchronousContinuations: !options.Cooperative);
        _follower = new LogFollower(log, options, settings, db, _pipeline, broadcast, _metrics, logger, this, readFrom, lastBarrier, lastBarrierPosition, _stop.Token);
    }

    /// <summary>The cluster's settings, as the log's first record states them.</summary>
    public ClusterSettings Settings => _settings;

    /// <summary>This server's options.</summary>
    public ServerOptions Options => _options;

    /// <summary>The request limits.</summary>
    public EngineLimits Limits => _options.Limits;

    /// <summary>One-shot outcomes that still hold their snapshot (not yet disposed).</summary>
    internal OutcomeLeases Leases { get; } = new();

    /// <summary>The local database (states, final meld counters).</summary>
    public Database Database => _db;

    /// <summary>The pipeline (stage counters, threading policy).</summary>
    public ThreadedPipeline Pipeline => _pipeline;

    /// <summary>The last ordinal final meld finished.</summary>
    public long LastMelded => _pipeline.LastMelded;

    /// <summary>How the pipeline's stage threads run on this machine: waiting, pinning, final meld's priority.</summary>
    public Tree.Pipeline.ResolvedThreading Threading => _pipeline.Threading;

    /// <summary>Transactions of this server appended and awaiting their outcome.</summary>
    public int InFlight => _options.MaxInFlight - _admission.CurrentCount;

    /// <summary>The server's counters.</summary>
    public ServerMetrics Metrics => _metrics;

    /// <summary>Why the server stopped serving (its reader, deserializer, submitter or pipeline failed); null while it serves.</summary>
    public Exception? Failure => _follower.Failure ?? _pipeline.Failure;

    /// <summary>The next log position the reader will look at.</summary>
    public long ReadPosition => _follower.ReadPosition;

    /// <summary>The last ordinal the reader assigned.</summary>
    public long LastRead => _follower.LastRead;

    /// <summary>
    /// Starts a server on <paramref name="log"/>: agrees on the cluster settings with the log's
    /// first record (writing it on a new log), loads the latest checkpoint if there is one, and
    /// starts reading and melding.
    /// </summary>
    /// <exception cref="ServerStartException">The log's settings differ from this server's, or the log cannot be used.</exception>
    public static async Task<TransactionServer> StartAsync(
        ISharedLog log,
        ServerOptions options,
        IIntentionBroadcast? broadcast = null,
        ILogger? logger = null,
        CancellationToken cancellationToken = default)
    {
        ArgumentNullException.ThrowIfNull(log);
        ArgumentNullException.ThrowIfNull(options);
        logger ??= NullLogger.Instance;
        options.Cluster.Validate();
        ArgumentOutOfRangeException.ThrowIfLessThan(options.MaxInFlight, 1);
        ArgumentOutOfRangeException.ThrowIfLessThan(options.DeserializerThreads, 1);
        if (options.Cluster.BlockSize > log.BlockSize)
        {
            throw new ServerStartException($"the cluster's intention block size ({options.Cluster.BlockSize} B) is larger than the log's block size ({log.BlockSize} B)");
        }

        var (settings, settingsPosition) = await Startup.AgreeOnSettingsAsync(log, options.Cluster, logger, options.TimeProvider ?? TimeProvider.System, cancellationToken).ConfigureAwait(false);
        Database db;
        StageSequences? sequences = null;
        var readFrom = settingsPosition + 1;
        long lastBarrier = 0;
        var restart = options.RecoverFromCheckpoint
            ? await Startup.FindCheckpointAsync(log, settingsPosition, logger, options.Cooperative, cancellationToken).ConfigureAwait(false)
            : null;
        if (settingsPosition < 0)
        {
            Startup.CheckTrimmedStart(restart, options.Cluster);
        }

        if (restart is { } r)
        {
            db = Database.Restore(r.Root, r.Info.StateSequence, r.Info.Barrier, 0, r.Info.Sequences.FinalMeld, values: options.RecycleValues ? new ValuePool() : null);
            sequences = r.Info.Sequences;
            readFrom = r.Info.ResumePosition;
            lastBarrier = r.Info.Barrier;
            logger.Restarting(options.ServerId, r.Position, r.Info.Barrier, r.Info.StateSequence, r.Info.ResumePosition);
        }
        else
        {
            db = new Database(values: options.RecycleValues ? new ValuePool() : null);
        }

        // Split phases (docs/doppel.md): a checkpoint's barrier ends a phase, so a restarted server
        // starts the next one where its peers did, splitting the keys the checkpoint names.
        if (settings.SplitPhases is { Enabled: true } split)
        {
            db.SplitPhases = restart is { } rs
                ? new SplitPhaseTable(split, rs.Info.Barrier + 1, rs.Info.SplitKeys)
                : new SplitPhaseTable(split);
        }

        // One thread in cooperative mode: a stashed transaction continues after the submit that
        // reconciled its state (DeliverOutcomes), on that thread.
        db.DeferReconciledWaiters = options.Cooperative;
        options.DatabaseOpened?.Invoke(db);

        // A restarted server's part rule starts from the barrier's marker, the position before its resume position.
        var lastBarrierPosition = restart is { } m ? m.Info.ResumePosition - 1 : 0;
        var server = new TransactionServer(log, options, settings, settingsPosition, db, sequences, readFrom, lastBarrier, lastBarrierPosition, broadcast, logger);
        server.StartedFrom(restart);
        server.Start();
        try
        {
            await server.CatchUpAsync(cancellationToken).ConfigureAwait(false);
        }
        catch
        {
            await server.DisposeAsync().ConfigureAwait(false);
            throw;
        }

        logger.Serving(options.ServerId, settings, server._pipeline.Threading);
        return server;
    }

    /// <summary>
    /// Waits until this server has melded the log as far as its tail when it started, so that its
    /// first transactions run on a state that holds everything committed before it served (a
    /// restarted server would otherwise answer from an old state until it caught up).
    /// </summary>
    private async Task CatchUpAsync(CancellationToken cancellationToken)
    {
        var started = _time.GetTimestamp();
        var from = ReadPosition;
        var tail = await _log.TailAsync(cancellationToken).ConfigureAwait(false);

        // The reader dispatches a position's ordinal before it moves past the position. With group
        // meld the first of a pair is melded with its partner, which nobody may append while the
        // log is quiet: a log that ends inside a pair is caught up once everything before it is.
        while (ReadPosition < tail || LastMelded < Meldable(LastRead))
        {
            if (Failure is { } failure)
            {
                throw new ServerStartException($"the server failed while catching up with the log: {failure.Message}", failure);
            }

            await PauseAsync(1, cancellationToken).ConfigureAwait(false);
        }

        if (tail > from)
        {
            var seconds = _time.GetElapsedTime(started).TotalSeconds;
            _logger.CaughtUp(_options.ServerId, tail, LastMelded, seconds);
        }
    }

    /// <summary>The last ordinal up to <paramref name="ordinal"/> that final meld can finish without a later one.</summary>
    private long Meldable(long ordinal) => _settings.GroupMeld && ordinal % 2 == 1 ? ordinal - 1 : ordinal;

    /// <summary>
    /// A pause of <paramref name="milliseconds"/> on the server's clock. In cooperative mode it
    /// takes no token, since cancelling a delay on a custom clock continues on the thread pool:
    /// the caller checks for the stop after it.
    /// </summary>
    private Task PauseAsync(int milliseconds, CancellationToken ct) => ServerClock.PauseAsync(_time, _cooperative, milliseconds, ct);

    /// <summary>The token the server's own awaits take: none in cooperative mode (see <see cref="PauseAsync"/>).</summary>
    private CancellationToken StopToken => _cooperative ? CancellationToken.None : _stop.Token;

    private void Start()
    {
        _follower.Start();
        if (_options.FlushEvery > 0 || _options.CheckpointEvery > 0)
        {
            // Cooperative: inline, like the follower's reader (the simulation's one thread).
            _maintenance = _cooperative ? MaintenanceLoopAsync() : Task.Run(MaintenanceLoopAsync);
        }
    }

    /// <summary>Called on the final-meld thread after each ordinal.</summary>
    private void OnMelded(long ordinal, MeldOutcome outcome, DatabaseState current)
    {
        // A disposed server's pipeline drains what it was given: with group meld it melds the
        // first ordinal of a pair whose partner never came alone, a decision and a state the log
        // has not made (the partner may still share its fate). Nobody is told of it: a waiting
        // transaction's outcome is unknown, and the hook does not see the state.
        if (Volatile.Read(ref _disposed) != 0 && _settings.GroupMeld && ordinal % 2 == 1 && ordinal == _follower.LastRead)
        {
            return;
        }

        _follower.StateMelded(ordinal, current);
        _options.MeldedHook?.Invoke(ordinal, outcome, current);
        AnnounceMelded(ordinal);
        if (!_follower.TakeControl(ordinal))
        {
            _metrics.OnMelded(outcome);
        }

        ref var slot = ref _localByOrdinal[ordinal % _localByOrdinal.Length];
        if (Volatile.Read(ref slot) is { } pending && pending.Ordinal == ordinal)
        {
            Volatile.Write(ref slot, null);
            if (_cooperative)
            {
                // Inside a stage step: the waiter continues after the submit returns (DeliverOutcomes).
                _melded.Add((pending, outcome));
            }
            else
            {
                pending.TrySetResult(outcome);
                pending.ReleaseDelivery();
            }
        }
    }

    /// <summary>Cooperative mode: completes the outcomes final meld reached during the last submit, in ordinal order.</summary>
    private void DeliverOutcomes()
    {
        AnnounceCooperativeMelded();
        _db.ReleaseReconciledWaiters();
        if (_melded.Count == 0)
        {
            return;
        }

        var done = _melded.ToArray();
        _melded.Clear();
        foreach (var (pending, outcome) in done)
        {
            pending.TrySetResult(outcome);
            pending.ReleaseDelivery();
        }
    }

    /// <summary>Stops reading, finishes what the pipeline holds, and completes every waiting transaction (outcome unknown).</summary>
    public async ValueTask DisposeAsync()
    {
        if (Interlocked.Exchange(ref _disposed, 1) != 0)
        {
            return;
        }

        if (_cooperative)
        {
            // One thread: the reader and maintenance loops see the stop at their next step
            // (CancelAsync would run the token's callbacks on the thread pool).
            _stop.Cancel();
        }
        else
        {
            await _stop.CancelAsync().ConfigureAwait(false);
            try
            {
                await _follower.Reading.ConfigureAwait(false);
                await _maintenance.ConfigureAwait(false);
            }
            catch (OperationCanceledException)
            {
            }
        }

        _follower.CompleteAndJoin();
        try
        {
            _pipeline.Dispose();
        }
        catch (Exception e)
        {
            _logger.PipelineFailed(e, _options.ServerId);
        }

        DeliverOutcomes();
        _ordinalWaiters.Stop(new EngineException(EngineErrorCode.Unavailable, $"server {_options.ServerId} is stopping"));

        foreach (var p in _localByNonce.Values.Concat(_localByOrdinal.OfType<PendingTransaction>()))
        {
            p.TrySetCanceled();
        }

        foreach (var c in _checkpointRequests.Values)
        {
            c.Done.TrySetCanceled();
        }

        _follower.ReleaseStates();
        _metrics.Dispose();
        _stop.Dispose();
    }

    internal void ThrowIfStopping()
    {
        if (_stop.IsCancellationRequested)
        {
            throw new EngineException(EngineErrorCode.Unavailable, $"server {_options.ServerId} is stopping");
        }

        if (_follower.Failure is { } f)
        {
            throw new EngineException(EngineErrorCode.Unavailable, $"server {_options.ServerId} stopped serving: {f.Message}");
        }
    }
}
