using System.Buffers.Binary;
using Hyder.Checker;
using Hyder.Log;
using Hyder.Log.Client;
using Hyder.Tree;
using Hyder.Tree.Memory;
using Hyder.Tree.Pipeline;
using Hyder.Tree.Serialization;

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
/// One incarnation of a transaction server in the simulation. It is the production engine
/// driven by a small simulated server loop: the production <see cref="LogClient"/> (over the
/// simulated network) subscribes to the log and appends; intentions are encoded and decoded by
/// the production codec; the production <see cref="ReferencePipeline"/> (premeld as configured,
/// then final meld) over a <see cref="Database"/> decides them. What it does not run is
/// <c>TransactionServer</c>'s threads (deserializers, submitter, threaded pipeline).
/// </summary>
internal sealed class SimServer
{
    private readonly SimCluster _cluster;
    private readonly LogClient _log;
    private readonly Database _db = new();
    private readonly ReferencePipeline _pipeline;
    private readonly Dictionary<long, DatabaseState> _states = [];
    private readonly Dictionary<long, TaskCompletionSource<bool?>> _pending = [];
    private readonly NodePool _pool = new(NodePool.DefaultCapacity);
    private bool _stopped;
    private bool _skipped;
    private long _ordinal;

    public SimServer(SimCluster cluster, string name, LogClient log, PipelineOptions pipeline)
    {
        _cluster = cluster;
        Name = name;
        _log = log;
        _pipeline = new ReferencePipeline(_db, pipeline);
        _states[0] = _db.PinCurrent();
    }

    public string Name { get; }

    public bool Alive { get; private set; } = true;

    /// <summary>The last ordinal this server melded.</summary>
    public long Melded => _ordinal;

    /// <summary>The next log position it will read.</summary>
    public long NextPosition { get; private set; }

    /// <summary>The current state's hash.</summary>
    public ulong StateHash => TreeInspector.StateHash(_db.Current.Root);

    public Task Start() => _cluster.Scheduler.Spawn(ReadLoopAsync);

    /// <summary>A crash: loops stop, waiting transactions become indeterminate, the objects are dropped.</summary>
    public void Crash()
    {
        // No cancellation: cancelling a Task.Delay on a custom TimeProvider continues on the
        // thread pool. The incarnation is abandoned instead; its loops end at their next step.
        Alive = false;
        _stopped = true;
        foreach (var waiter in _pending.Values)
        {
            waiter.TrySetResult(null);
        }

        _pending.Clear();
    }

    private async Task ReadLoopAsync()
    {
        try
        {
            await foreach (var record in _log.SubscribeAsync(0))
            {
                if (_stopped)
                {
                    return;
                }

                var block = record.Block.ToArray();
                var stall = _cluster.MeldStall(Name);
                if (stall > TimeSpan.Zero)
                {
                    await Task.Delay(stall, _cluster.Scheduler.Time);
                }

                await HandleAsync(record.Address, block);
                NextPosition = record.Address + 1;
            }
        }
        catch (SharedLogException e) when (!_stopped)
        {
            // The log did not answer for the whole operation timeout: the server stops, as the
            // real one does when its reader fails; the cluster restarts it.
            _cluster.Trace.Add($"{Name} reader failed: {e.Message}");
            _cluster.ServerFailed(this);
        }
        catch (Exception e) when (!_stopped)
        {
            _cluster.Violation($"{Name}'s reader failed: {e}");
        }
    }

    private async Task HandleAsync(long position, byte[] block)
    {
        if (!BlockHeader.TryParse(block, out var header, out var error))
        {
            _cluster.Violation($"{Name} read a block at @{position} that fails its own checks ({error}); the log's CRCs must have rejected it");
            return;
        }

        if (header.Kind != BlockKind.Intention)
        {
            return;
        }

        if (_cluster.Options.PlantSkipOrdinal == _ordinal + 1 && Name == _cluster.LastServerName && !_skipped)
        {
            // The planted bug of the mutation test: this server never sees one intention.
            _skipped = true;
            return;
        }

        var v = ++_ordinal;
        var info = IntentionDecoder.ReadHeader(block);
        var s = info.SnapshotSequence;
        if (s >= v || !_states.TryGetValue(s, out var snapshot))
        {
            _cluster.Violation($"{Name}: intention #{v} @{position} names snapshot #{s}, which is not a committed state here");
            return;
        }

        var parts = new ReadOnlyMemory<byte>[info.PartPositions.Count];
        for (var i = 0; i < parts.Length; i++)
        {
            var buffer = new byte[_log.BlockSize];
            var read = await _log.ReadAsync(info.PartPositions[i], buffer);
            parts[i] = buffer.AsMemory(0, read.Kind == LogEntryKind.Data ? read.Length : 0);
        }

        Intention intention;
        try
        {
            intention = IntentionDecoder.Decode(block, parts, snapshot, _pool);
        }
        catch (IntentionFormatException e)
        {
            _cluster.Violation($"{Name}: intention #{v} @{position} does not decode: {e.Message}");
            return;
        }

        if (_stopped)
        {
            return;
        }

        _db.Append(intention, v, position);
        foreach (var decision in _pipeline.Process(intention))
        {
            var current = _db.Current;
            if (!_states.ContainsKey(current.Sequence))
            {
                _states[current.Sequence] = _db.PinCurrent();
            }

            var hash = TreeInspector.StateHash(current.Root);
            _cluster.Trace.Add($"{Name} meld #{decision.Ordinal} @{position} {(decision.Committed ? "commit" : "abort " + decision.Outcome.Cause)} state {hash:x16}");
            _cluster.Invariants.Melded(Name, decision.Ordinal, decision.Committed, hash);
            if (_pending.Remove(info.Nonce, out var waiter))
            {
                waiter.TrySetResult(decision.Committed);
            }
        }
    }

    /// <summary>Runs one transaction of the checker's workload; the reads are filled in on success.</summary>
    public async Task<(TxnOutcome Outcome, Mop[]? Completed)> ExecuteAsync(Mop[] mops, IsolationLevel isolation)
    {
        var snapshot = _db.PinCurrent();
        Intention? intention;
        var completed = new Mop[mops.Length];
        using (var tx = _db.BeginAt(snapshot, isolation, _pool))
        {
            _db.Release(snapshot);
            for (var i = 0; i < mops.Length; i++)
            {
                completed[i] = Run(tx, mops[i]);
            }

            intention = tx.Complete();
        }

        if (intention is null)
        {
            // Read-only: commits on its snapshot without touching the log.
            return (TxnOutcome.Ok, completed);
        }

        var encoded = IntentionEncoder.Encode(intention, _log.BlockSize);
        var waiter = new TaskCompletionSource<bool?>();
        _pending[encoded.Nonce] = waiter;
        try
        {
            var positions = new long[encoded.Parts.Count];
            for (var i = 0; i < positions.Length; i++)
            {
                positions[i] = await AppendAsync(encoded.Parts[i]);
            }

            await AppendAsync(encoded.Finish(positions));
        }
        catch (SharedLogException)
        {
            // The block may or may not be in the log: the outcome is unknown to the client.
            _pending.Remove(encoded.Nonce);
            return (TxnOutcome.Info, null);
        }

        return await waiter.Task switch
        {
            true => (TxnOutcome.Ok, completed),
            false => (TxnOutcome.Fail, null),
            null => (TxnOutcome.Info, null),
        };
    }

    private async Task<long> AppendAsync(ReadOnlyMemory<byte> block)
    {
        var bytes = block.ToArray();
        var address = await _log.AppendAsync(bytes);
        _cluster.Invariants.Acknowledged(Name, address, bytes);
        _cluster.Trace.Add($"{Name} appended {bytes.Length} B @{address}");
        return address;
    }

    private static Mop Run(Transaction tx, Mop mop)
    {
        switch (mop.Kind)
        {
            case MopKind.Append:
            {
                var key = ListKey(mop.Key);
                var list = tx.TryGet(key, out var payload) ? Decode(payload) : [];
                list.Add(mop.Value!.Value);
                tx.Put(key, Encode(list));
                return mop;
            }

            case MopKind.ReadList:
                return mop.WithList(tx.TryGet(ListKey(mop.Key), out var listPayload) ? Decode(listPayload) : []);
            case MopKind.Write:
                tx.Put(RegisterKey(mop.Key), Encode([mop.Value!.Value]));
                return mop;
            default:
                return mop.WithValue(tx.TryGet(RegisterKey(mop.Key), out var value) ? Decode(value)[0] : null);
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
