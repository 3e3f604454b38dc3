using System.Runtime.CompilerServices;
using Hyder.Log.Embedded;
using Hyder.Log.Storage;
using Hyder.Log.Units;
using Hyder.Server;
using Hyder.Server.Engine;
using Hyder.Tree.Meld;
using Hyder.Ycsb.Workloads;
using Operation = Hyder.Server.Engine.Operation;
using IsolationLevel = Hyder.Ycsb.Workloads.IsolationLevel;
using TreeIsolation = Hyder.Tree.IsolationLevel;

namespace Hyder.Ycsb.Targets.Hyder;

/// <summary>
/// <c>--target embedded</c>: a Hyder cluster inside this process — the embedded log (sequencer, one
/// log unit, projections) in a data directory and one or more transaction servers on it, each
/// melding every intention — driven through the servers' engine interface, the one the gRPC
/// service maps its messages onto. Sessions go to the servers in turn. A temporary data directory
/// is removed when the target is disposed.
/// </summary>
internal sealed partial class HyderEmbeddedTarget : ITarget
{
    private readonly EmbeddedClusterSettings _settings;
    private readonly EmbeddedLog _log;
    private readonly TransactionServer[] _servers;
    private readonly string _directory;
    private readonly bool _temporary;
    private int _nextServer;

    private HyderEmbeddedTarget(EmbeddedClusterSettings settings, EmbeddedLog log, TransactionServer[] servers, string directory, bool temporary)
    {
        _settings = settings;
        _log = log;
        _servers = servers;
        _directory = directory;
        _temporary = temporary;
    }

    public string Description => string.Create(System.Globalization.CultureInfo.InvariantCulture,
        $"Hyder embedded cluster: {_servers.Length} transaction server{(_servers.Length == 1 ? "" : "s")} ({_settings.Pipeline}) on one embedded log in {(_temporary ? "a temporary directory" : _directory)}, fsync {(_settings.Fsync ? (_settings.CommitDelay > TimeSpan.Zero ? $"group commit (delay {_settings.CommitDelay.TotalMicroseconds:0} µs)" : "group commit (no delay)") : "off")}{(LogUnitOptions.DropsPages(_settings.Fsync ? FsyncPolicy.GroupCommit : FsyncPolicy.None, _settings.PageCacheSlots) ? $", page cache kept for the newest {_settings.PageCacheSlots} slots" : "")}, Add as {(_settings.Commutative ? "a commutative operation" : "a read-modify-write")}{(_settings.Cluster.SplitPhaseLength > 0 ? $", split phases of {_settings.Cluster.SplitPhaseLength} ordinals (hot at {_settings.Cluster.HotThreshold} operations)" : "")}; stage threads: {_servers[0].Threading}");

    /// <summary>The servers (for tests).</summary>
    public IReadOnlyList<TransactionServer> Servers => _servers;

    /// <summary>Opens the log and starts the servers; a failure releases whatever was started.</summary>
    public static async Task<HyderEmbeddedTarget> StartAsync(EmbeddedClusterSettings settings, CancellationToken cancellationToken)
    {
        var temporary = settings.DataDirectory is null;
        var directory = settings.DataDirectory ?? Path.Combine(Path.GetTempPath(), $"hyder-ycsb-{Environment.ProcessId}-{Guid.NewGuid():N}");
        Directory.CreateDirectory(directory);
        EmbeddedLog? log = null;
        var servers = new List<TransactionServer>();
        try
        {
            log = await EmbeddedLog.OpenAsync(
                new EmbeddedLogOptions
                {
                    DataDirectory = directory,
                    BlockSize = Math.Max(settings.Cluster.BlockSize, LogUnitOptions.DefaultBlockSize),
                    Fsync = settings.Fsync ? FsyncPolicy.GroupCommit : FsyncPolicy.None,
                    CommitDelay = settings.CommitDelay,
                    CachedSlots = settings.PageCacheSlots,
                },
                cancellationToken: cancellationToken).ConfigureAwait(false);
            for (var i = 0; i < settings.Servers; i++)
            {
                var options = new ServerOptions
                {
                    ServerId = $"ycsb-{i + 1}",
                    Cluster = settings.Cluster,
                    MaxInFlight = Math.Max(512, 2 * settings.Sessions),

                    // As hyder-server runs: written values recycled (docs/value-storage.md).
                    RecycleValues = true,
                    Threading = new global::Hyder.Tree.Pipeline.PipelineThreading { FinalMeldNice = settings.FinalMeldNice },
                };
                servers.Add(await TransactionServer.StartAsync(log, options, cancellationToken: cancellationToken).ConfigureAwait(false));
            }

            return new HyderEmbeddedTarget(settings, log, [.. servers], directory, temporary);
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            await ReleaseAsync(servers, log, temporary ? directory : null).ConfigureAwait(false);
            throw new TargetUnavailableException($"the embedded Hyder cluster did not start: {e.Message}", e);
        }
        catch
        {
            await ReleaseAsync(servers, log, temporary ? directory : null).ConfigureAwait(false);
            throw;
        }
    }

    public async Task PrepareAsync(IReadOnlyList<KeySpace> keySpaces, bool reset, CancellationToken cancellationToken)
    {
        if (!reset)
        {
            return;
        }

        // A kept data directory may hold an earlier load: delete each key space's keys, a batch per transaction.
        var engine = _servers[0];
        foreach (var space in keySpaces)
        {
            while (true)
            {
                var batch = new List<Operation>();
                await foreach (var (key, _) in engine.ScanAsync(HyderKeys.Start(space), HyderKeys.End(space), 1000, cancellationToken).ConfigureAwait(false))
                {
                    batch.Add(Operation.Delete(key));
                }

                if (batch.Count == 0)
                {
                    break;
                }

                using var outcome = await engine.ExecuteAsync(TreeIsolation.Serializable, batch, cancellationToken).ConfigureAwait(false);
                if (outcome.Status == TransactionStatus.Unknown)
                {
                    throw new TargetUnavailableException($"emptying key space {space.Name}: the server could not learn a delete's outcome ({outcome.Detail}).");
                }
            }
        }
    }

    public Task<ITargetSession> OpenSessionAsync(CancellationToken cancellationToken)
    {
        var server = _servers[(Interlocked.Increment(ref _nextServer) - 1) % _servers.Length];
        return Task.FromResult<ITargetSession>(new Session(server, _settings.Commutative));
    }

    public async ValueTask DisposeAsync() => await ReleaseAsync(_servers, _log, _temporary ? _directory : null).ConfigureAwait(false);

    private static async Task ReleaseAsync(IEnumerable<TransactionServer> servers, EmbeddedLog? log, string? temporaryDirectory)
    {
        foreach (var server in servers)
        {
            await server.DisposeAsync().ConfigureAwait(false);
        }

        if (log is not null)
        {
            await log.DisposeAsync().ConfigureAwait(false);
        }

        if (temporaryDirectory is not null && Directory.Exists(temporaryDirectory))
        {
            Directory.Delete(temporaryDirectory, recursive: true);
        }
    }

    internal static TreeIsolation Map(IsolationLevel isolation) => isolation switch
    {
        IsolationLevel.Serializable => TreeIsolation.Serializable,
        IsolationLevel.RepeatableRead => TreeIsolation.RepeatableRead,
        IsolationLevel.Snapshot => TreeIsolation.SnapshotIsolation,
        IsolationLevel.ReadCommitted => TreeIsolation.ReadCommitted,
        _ => throw new ArgumentOutOfRangeException(nameof(isolation), isolation, null),
    };

    internal static Metrics.AbortCause Map(AbortCause cause) => cause switch
    {
        AbortCause.WriteWrite => Metrics.AbortCause.WriteWrite,
        AbortCause.ReadWrite => Metrics.AbortCause.ReadWrite,
        AbortCause.Phantom => Metrics.AbortCause.Phantom,
        AbortCause.DeleteConflict => Metrics.AbortCause.DeleteConflict,
        AbortCause.Rejected => Metrics.AbortCause.Rejected,
        AbortCause.GroupConflict => Metrics.AbortCause.GroupConflict,
        AbortCause.FateShared => Metrics.AbortCause.FateShared,
        AbortCause.SnapshotTooOld => Metrics.AbortCause.SnapshotTooOld,
        AbortCause.SnapshotBeforeCheckpoint => Metrics.AbortCause.SnapshotBeforeCheckpoint,
        AbortCause.BoundViolated => Metrics.AbortCause.BoundViolated,
        AbortCause.TypeMismatch => Metrics.AbortCause.TypeMismatch,
        AbortCause.SplitPhase => Metrics.AbortCause.SplitPhase,
        _ => Metrics.AbortCause.Other,
    };

    /// <summary>One interactive engine transaction at a time on one server.</summary>
    private sealed class Session(TransactionServer server, bool commutative) : HyderSession
    {
        private IInteractiveTransaction? _tx;

        public override async ValueTask AddAsync(KeySpace space, ReadOnlyMemory<byte> key, long delta, long? min, long? max, CancellationToken cancellationToken)
        {
            if (!commutative)
            {
                await base.AddAsync(space, key, delta, min, max, cancellationToken).ConfigureAwait(false);
                return;
            }

            await Open.ExecuteAsync(Operation.Add(HyderKeys.Encode(space, key.Span), delta, min, max), cancellationToken).ConfigureAwait(false);
        }

        public override ValueTask BeginAsync(IsolationLevel isolation, bool readOnly, CancellationToken cancellationToken)
        {
            _tx?.Abort();
            _tx = server.Begin(Map(isolation));
            return ValueTask.CompletedTask;
        }

        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
        public override async ValueTask<CommitOutcome> CommitAsync(CancellationToken cancellationToken)
        {
            var tx = _tx ?? throw new InvalidOperationException("No transaction is open.");
            _tx = null;
            await using (tx.ConfigureAwait(false))
            {
                var outcome = await tx.CommitAsync(cancellationToken).ConfigureAwait(false);
                return outcome.Status switch
                {
                    TransactionStatus.Committed => CommitOutcome.Success,
                    TransactionStatus.Aborted => CommitOutcome.Aborted(Map(outcome.Cause)),
                    _ => CommitOutcome.Aborted(Metrics.AbortCause.Unknown),
                };
            }
        }

        public override ValueTask RollbackAsync(CancellationToken cancellationToken)
        {
            _tx?.Abort();
            _tx = null;
            return ValueTask.CompletedTask;
        }

        public override ValueTask DisposeAsync() => RollbackAsync(CancellationToken.None);

        /// <summary>A server that recycles values copies each written value before the call returns (an interactive put within the call), so the driver's buffer can be passed as it is.</summary>
        protected override bool ReadsValuesOnlyDuringTheCall => server.Options.RecycleValues;

        /// <summary>The engine's one-shot ExecuteAsync, the call the service's Execute makes.</summary>
        protected override async ValueTask<OneShotOutcome> ExecuteOneShotAsync(IsolationLevel isolation, (byte[] Key, byte[]? Value)[] operations, CancellationToken cancellationToken)
        {
            var request = new Operation[operations.Length];
            for (var i = 0; i < request.Length; i++)
            {
                var (key, value) = operations[i];
                request[i] = value is null ? Operation.Get(key) : Operation.Put(key, value);
            }

            // The results' values are lent until the outcome is disposed; only Found is read here.
            using var outcome = await server.ExecuteAsync(Map(isolation), request, cancellationToken).ConfigureAwait(false);
            switch (outcome.Status)
            {
                case TransactionStatus.Committed:
                    var notFound = 0;
                    for (var i = 0; i < operations.Length; i++)
                    {
                        if (operations[i].Value is null && !outcome.Results[i].Found)
                        {
                            notFound++;
                        }
                    }

                    return new OneShotOutcome(CommitOutcome.Success, notFound);
                case TransactionStatus.Aborted:
                    return new OneShotOutcome(CommitOutcome.Aborted(Map(outcome.Cause)), 0);
                default:
                    return new OneShotOutcome(CommitOutcome.Aborted(Metrics.AbortCause.Unknown), 0);
            }
        }

        // ExecuteAsync: an operation that meets a key split in the snapshot's phase waits for the
        // reconciled state without blocking a thread (docs/doppel.md, "Split phases").
        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder<>))]
        protected override async ValueTask<byte[]?> GetValueAsync(byte[] key, CancellationToken cancellationToken)
        {
            var result = await Open.ExecuteAsync(Operation.Get(key), cancellationToken).ConfigureAwait(false);
            return result.Found ? result.Value : null;
        }

        [AsyncMethodBuilder(typeof(PoolingAsyncValueTaskMethodBuilder))]
        protected override async ValueTask PutValueAsync(byte[] key, byte[] value, CancellationToken cancellationToken) =>
            await Open.ExecuteAsync(Operation.Put(key, value), cancellationToken).ConfigureAwait(false);

        protected override async ValueTask<bool> DeleteKeyAsync(byte[] key, CancellationToken cancellationToken) =>
            (await Open.ExecuteAsync(Operation.Delete(key), cancellationToken).ConfigureAwait(false)).Found;

        protected override async ValueTask<int> ScanRangeAsync(byte[] low, byte[] high, int limit, CancellationToken cancellationToken) =>
            (await Open.ExecuteAsync(Operation.Scan(low, high, limit), cancellationToken).ConfigureAwait(false)).Rows?.Count ?? 0;

        private IInteractiveTransaction Open => _tx ?? throw new InvalidOperationException("No transaction is open.");
    }
}
