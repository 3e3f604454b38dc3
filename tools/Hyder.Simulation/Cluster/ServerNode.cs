using System.Buffers.Binary;
using Hyder.Checker;
using Hyder.Log;
using Hyder.Log.Client;
using Hyder.Server;
using Hyder.Server.Engine;
using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Simulation.Cluster;

/// <summary>What a client learns of one transaction.</summary>
internal enum TxnOutcome
{
    /// <summary>Committed; the reads are known.</summary>
    Ok,

    /// <summary>Certainly did not commit.</summary>
    Fail,

    /// <summary>Unknown (the server crashed, or the append timed out).</summary>
    Info,
}

/// <summary>
/// One incarnation of a transaction server in the simulation: the production
/// <see cref="TransactionServer"/> in cooperative mode (no thread: its reader, deserialization,
/// pipeline stages, executor and maintenance run on the simulation's one thread, on its virtual
/// clock) over the production <see cref="LogClient"/>. Clients call its
/// <see cref="ITransactionEngine"/> API. A crash halts the incarnation's log (<see cref="SimLog"/>)
/// and abandons its objects; its loops end at their next step.
/// </summary>
internal sealed partial class ServerNode
{
    private readonly SimCluster _cluster;
    private readonly SimLog _log;
    private readonly TaskCompletionSource _crashed = new();
    private readonly SimBroadcast.Endpoint? _broadcast;
    private TransactionServer? _server;
    private long _melded;
    private long _startedAt;
    private long? _firstMeldAt;

    public ServerNode(SimCluster cluster, string name, LogClient client)
    {
        _cluster = cluster;
        Name = name;
        _log = new SimLog(cluster, name, client);
        _broadcast = cluster.Broadcast?.Attach(name);
    }

    public string Name { get; }

    /// <summary>The failure cause of a transaction refused because the server does not serve yet (nothing sent).</summary>
    public const string NotServing = "server starting or its log halted";

    /// <summary>The server once it has caught up and serves; null while it starts.</summary>
    public TransactionServer? Server => _server;

    /// <summary>The last ordinal this incarnation melded.</summary>
    public long Melded => _melded;

    /// <summary>The next log position it will read.</summary>
    public long NextPosition => _server?.ReadPosition ?? 0;

    /// <summary>The current state's hash.</summary>
    public ulong StateHash => _server is { } s ? WithSplitTable(TreeInspector.StateHash(s.Database.Current.Root)) : 0;

    /// <summary>Starts the server: agree on the settings (the first server writes them), replay the log, catch up, serve.</summary>
    public async Task StartAsync()
    {
        _startedAt = _cluster.Scheduler.Now;
        var options = new ServerOptions
        {
            ServerId = Name,
            Cluster = _cluster.Settings,
            Cooperative = true,
            TimeProvider = _cluster.Scheduler.Time,
            MaxInFlight = 16,
            FlushEvery = _cluster.Options.FlushEvery,
            CheckpointEvery = _cluster.Options.CheckpointEvery,
            RecoverFromCheckpoint = true,
            TrimKeepCheckpoints = _cluster.TrimPolicy,
            MeldedHook = OnMelded,
            TrustBroadcast = _cluster.Options.TrustBroadcast,

            // Servers whose names end in an odd digit recycle written values and the others do
            // not: the run's state-hash comparisons then hold the two to the same states.
            RecycleValues = Name[^1] % 2 == 1,
            DatabaseOpened = db => _database = db,
        };
        TransactionServer server;
        try
        {
            server = await TransactionServer.StartAsync(_log, options, _broadcast);
        }
        catch (Exception e) when (_log.Halted)
        {
            _cluster.Trace.Add($"{Name} abandoned while starting ({e.GetType().Name})");
            return;
        }
        catch (Exception e) when (IsLogFailure(e) || IsBehindTrim(e) || (e is Hyder.Server.Cluster.ServerStartException && _cluster.Invariants.TrimmedBelow > 0))
        {
            // A trim may pass a starting server (its checkpoint's parts, or the position it reads
            // from, trimmed by a newer checkpoint's trim): it starts again, from the newer one.
            _cluster.Trace.Add($"{Name} start failed: {e.Message}");
            if (IsBehindTrim(e))
            {
                _cluster.Stats.BehindTrim++;
                _cluster.BehindTrim(Name);
            }

            _cluster.ServerFailed(this, e.Message);
            return;
        }
        catch (Exception e)
        {
            _cluster.Violation($"{Name} failed to start: {e}");
            return;
        }

        if (_log.Halted)
        {
            return;
        }

        _server = server;
        var now = _cluster.Scheduler.Now;
        _cluster.Stats.Startups++;
        _cluster.Stats.StartupTime += TimeSpan.FromTicks(now - _startedAt);
        _cluster.Stats.CheckpointLoadTime += TimeSpan.FromTicks((_firstMeldAt ?? now) - _startedAt);

        // A server started from a checkpoint and with nothing to meld since stands at its barrier.
        _melded = Math.Max(_melded, server.LastMelded);
        _cluster.Trace.Add($"{Name} serving from @{server.ReadPosition} at #{server.LastMelded}{(server.StartedFromCheckpoint is { } at ? $" (started from the checkpoint @{at})" : "")}");
        _cluster.Serving(this, server.StartedFromCheckpoint);
        await WatchAsync(server);
    }

    /// <summary>A crash: the log halts, waiting transactions become indeterminate, the objects are dropped.</summary>
    public void Crash()
    {
        // No cancellation and no DisposeAsync: a crashed process does not clean up. Its log fails
        // every call from now on, so its reader and maintenance loops end at their next step.
        if (_server is null && !_log.Halted)
        {
            _cluster.Stats.StartupsAbandoned++;
        }

        _log.Halt();
        _broadcast?.Kill();
        _crashed.TrySetResult();

        Release();
    }

    /// <summary>
    /// Frees what a process's end frees: the server's meter, the one object outside the server
    /// that holds it (the runtime's list of live meters). Without this every server of a sweep
    /// stayed reachable, about 2.7 MB a seed, and a 10,000-seed sweep ran out of memory.
    /// </summary>
    public void Release() => _server?.Metrics.Dispose();

    /// <summary>A reader that gave up (the log did not answer for the whole operation timeout) stops the server: restart it.</summary>
    private async Task WatchAsync(TransactionServer server)
    {
        while (!_log.Halted)
        {
            await Task.Delay(TimeSpan.FromMilliseconds(50), _cluster.Scheduler.Time);
            if (_log.Halted || server.Failure is not { } failure)
            {
                continue;
            }

            if (IsBehindTrim(failure))
            {
                // Behind the trim: the server stopped (it never waits on a trimmed position) and
                // its next incarnation must start from a checkpoint.
                _cluster.Trace.Add($"{Name} behind the trim: {failure.Message}");
                _cluster.Stats.BehindTrim++;
                _cluster.BehindTrim(Name);
                _cluster.ServerFailed(this, failure.Message);
            }
            else if (IsLogFailure(failure))
            {
                _cluster.Trace.Add($"{Name} reader failed: {failure.Message}");
                _cluster.ServerFailed(this, failure.Message);
            }
            else
            {
                _cluster.Violation($"{Name} stopped serving: {failure}");
            }

            return;
        }
    }

    private static bool IsLogFailure(Exception e) => e is SharedLogException || e.InnerException is SharedLogException;

    private static bool IsBehindTrim(Exception e) => e is TrimmedLogException || e.InnerException is TrimmedLogException;

    /// <summary>The administrator's trim by the rule (keeping <paramref name="keep"/> checkpoints), through this server.</summary>
    public async Task AdminTrimAsync(int keep)
    {
        if (_server is not { } server || _log.Halted)
        {
            return;
        }

        _cluster.Trace.Add($"{Name} admin trim keeping {keep}: mark {(server.TrimMark(keep) is { } mark ? "@" + mark : "none yet")}");
        try
        {
            await server.TrimAsync(keep);
        }
        catch (Exception e) when (IsLogFailure(e) || e is EngineException)
        {
            _cluster.Trace.Add($"{Name} admin trim failed: {e.Message}");
        }
    }

    /// <summary>The server's final-meld hook: every ordinal's decision and state hash go to the invariants.</summary>
    private void OnMelded(long ordinal, MeldOutcome outcome, DatabaseState current)
    {
        if (_log.Halted)
        {
            return;
        }

        _firstMeldAt ??= _cluster.Scheduler.Now;
        var hash = WithSplitTable(TreeInspector.StateHash(current.Root));
        _cluster.Trace.Add($"{Name} meld #{ordinal} {(outcome.Committed ? "commit" : "abort " + outcome.Cause)} state {hash:x16}");
        _cluster.Invariants.Melded(Name, ordinal, outcome.Committed, hash);
        if (!outcome.Committed && outcome.Cause == AbortCause.Rejected && outcome.RejectReason?.Contains("is a second copy of intention", StringComparison.Ordinal) != true)
        {
            _cluster.Violation($"{Name}: intention #{ordinal} was rejected: {outcome.RejectReason}");
        }

        _melded = ordinal;
    }

    /// <summary>Runs one transaction of the checker's workload through the engine API; the reads are filled in on success.</summary>
    /// <remarks>A <see cref="TxnOutcome.Fail"/> comes with its cause, for <see cref="SimStats.FailCauses"/>.</remarks>
    public async Task<(TxnOutcome Outcome, Mop[]? Completed, string? FailCause)> ExecuteAsync(Mop[] mops, IsolationLevel isolation, CounterOp[]? counters = null)
    {
        if (_server is not { } server || _log.Halted)
        {
            // Still starting: nothing was sent.
            return (TxnOutcome.Fail, null, NotServing);
        }

        var completed = new Mop[mops.Length];
        Task<TransactionOutcome> commit;
        IInteractiveTransaction tx;
        try
        {
            tx = server.Begin(isolation);
        }
        catch (EngineException e)
        {
            return (TxnOutcome.Fail, null, $"refused at begin ({e.Code})");
        }

        try
        {
            for (var i = 0; i < mops.Length; i++)
            {
                completed[i] = await RunAsync(tx, mops[i]);
            }

            foreach (var op in counters ?? [])
            {
                // A read of a split counter waits (stashed) for the next reconciled state, which a
                // crashed server never reaches: nothing was appended yet.
                var step = RunCounterAsync(tx, op);
                if (await Task.WhenAny(step, _crashed.Task) != step)
                {
                    return (TxnOutcome.Fail, null, "server crashed during a stashed read");
                }

                await step;
            }

            commit = tx.CommitAsync().AsTask();
        }
        catch (EngineException e)
        {
            // Refused before anything was appended (stopping, or no admission slot).
            tx.Abort();
            return (TxnOutcome.Fail, null, $"refused during execution ({e.Code})");
        }

        if (await Task.WhenAny(commit, _crashed.Task) != commit)
        {
            return (TxnOutcome.Info, null, null);
        }

        TransactionOutcome outcome;
        try
        {
            outcome = await commit;
        }
        catch (EngineException e)
        {
            return (TxnOutcome.Fail, null, $"refused at commit ({e.Code})");
        }

        return outcome.Status switch
        {
            TransactionStatus.Committed => (TxnOutcome.Ok, completed, null),
            TransactionStatus.Aborted => (TxnOutcome.Fail, null, $"aborted by meld ({outcome.Cause})"),
            _ => (TxnOutcome.Info, null, null),
        };
    }

    private static async Task<Mop> RunAsync(IInteractiveTransaction tx, Mop mop)
    {
        switch (mop.Kind)
        {
            case MopKind.Append:
            {
                var key = ListKey(mop.Key);
                var read = await tx.ExecuteAsync(Operation.Get(key));
                var list = read.Found ? Decode(read.Value!) : [];
                list.Add(mop.Value!.Value);
                await tx.ExecuteAsync(Operation.Put(key, Encode(list)));
                return mop;
            }

            case MopKind.ReadList:
            {
                var read = await tx.ExecuteAsync(Operation.Get(ListKey(mop.Key)));
                return mop.WithList(read.Found ? Decode(read.Value!) : []);
            }

            case MopKind.Write:
                await tx.ExecuteAsync(Operation.Put(RegisterKey(mop.Key), Encode([mop.Value!.Value])));
                return mop;
            default:
            {
                var read = await tx.ExecuteAsync(Operation.Get(RegisterKey(mop.Key)));
                return mop.WithValue(read.Found ? Decode(read.Value!)[0] : null);
            }
        }
    }

    private static byte[] ListKey(long k) => System.Text.Encoding.ASCII.GetBytes($"l{k:D8}");

    private static byte[] RegisterKey(long k) => System.Text.Encoding.ASCII.GetBytes($"r{k:D8}");

    private static byte[] Encode(List<long> values)
    {
        var bytes = new byte[values.Count * 8];
        for (var i = 0; i < values.Count; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(i * 8), values[i]);
        }

        return bytes;
    }

    private static List<long> Decode(byte[] payload)
    {
        var values = new List<long>(payload.Length / 8);
        for (var i = 0; i + 8 <= payload.Length; i += 8)
        {
            values.Add(BinaryPrimitives.ReadInt64LittleEndian(payload.AsSpan(i)));
        }

        return values;
    }
}
