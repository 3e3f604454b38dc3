using System.Collections.Concurrent;
using Hyder.Log;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Tree;
using Hyder.Tree.Memory;
using Hyder.Tree.Pipeline;
using Microsoft.Extensions.Logging;

namespace Hyder.Server.Follower;

/// <summary>
/// The log side of a transaction server (docs/server.md, "Threads"): reads the shared log in order
/// (a block a peer broadcast is taken from the broadcast cache instead), fills holes and waiting
/// group-meld pairs, numbers intentions, applies the rules every server applies from the log alone
/// (references, W, checkpoint barriers, the duplicate-copy rule, the part rule), deserializes and
/// validates peers' intentions on n threads against the state window, and hands every ordinal to
/// the meld pipeline in log order.
/// </summary>
/// <remarks>
/// <para>Its state is its own: the read position, the ordinal, the barrier, the nonces, the
/// stashed parts, the hand-off queues and threads. What it needs of the server is passed in the
/// constructor, the rest through <see cref="IFollowerHost"/>; final meld tells it of each state
/// (<see cref="StateMelded"/>), and asks it whether an ordinal was a control record's
/// (<see cref="TakeControl"/>).</para>
/// <para>Threads: the reader (an async loop), n deserializers and one submitter; in cooperative
/// mode none: the reader deserializes and submits inline, on whatever thread completes the log's
/// operations.</para>
/// </remarks>
internal sealed partial class LogFollower
{
    /// <summary>How long the log must have been quiet, with nothing in flight here, before the reader polls its tail less often.</summary>
    private static readonly TimeSpan s_quietAfter = TimeSpan.FromMilliseconds(50);

    /// <summary>The reader's poll period at the tail of a quiet log (a local append wakes it at once).</summary>
    private const int QuietPollMs = 20;

    /// <summary>
    /// The same with intention broadcast: a peer's block wakes the reader at once, so the poll only
    /// catches what broadcast lost (a peer not connected, a full queue) and can be rarer.
    /// </summary>
    private const int QuietPollWithBroadcastMs = 100;

    private readonly ISharedLog _log;
    private readonly ServerOptions _options;
    private readonly ClusterSettings _settings;
    private readonly Database _db;
    private readonly ThreadedPipeline _pipeline;
    private readonly IIntentionBroadcast? _broadcast;
    private readonly ServerMetrics _metrics;
    private readonly ILogger _logger;
    private readonly IFollowerHost _host;
    private readonly TimeProvider _time;
    private readonly bool _cooperative;
    private readonly CancellationToken _stop;

    /// <summary>The committed states of the last W ordinals, pinned, that peers' intentions are decoded against.</summary>
    private readonly StateWindow _window;

    private readonly HandOffQueue<Job> _submitQueue = new(4096);

    /// <summary>The jobs intentions are read into, back once submitted.</summary>
    private readonly Job.Pool _jobs = new(4096);
    private readonly PartStash _parts = new();

    /// <summary>The first copy of each recent intention, for the duplicate-copy rule.</summary>
    private readonly FirstCopies _firstCopies;

    /// <summary>Ordinals of control records (fillers, checkpoint markers): melded as no-ops, not counted as intentions.</summary>
    private readonly ConcurrentDictionary<long, byte> _controlOrdinals = new();
    private int _pendingControl;

    /// <summary>Deserializers signal the submitter when a job is ready.</summary>
    private readonly StageSignal _jobReady = new();

    /// <summary>
    /// Jobs handed to the submitter and not yet submitted: while any is, the reader queues every
    /// job behind them; at 0 it may submit a local intention itself (<see cref="Dispatch"/>).
    /// </summary>
    private long _queuedForSubmit;

    private long _submittedByReader;

    /// <summary>Final meld signals deserializers waiting for a snapshot state.</summary>
    private readonly StageSignal _stateAdded = new();

    /// <summary>Wakes the reader waiting at the tail (an executor appended, a peer's block arrived).</summary>
    private readonly TailWake _tailWake = new();

    private HandOffQueue<Job>[] _lanes = [];
    private Thread[] _deserializers = [];
    private Thread? _submitter;
    private Task _reader = Task.CompletedTask;

    /// <summary>Cooperative mode: the pool intentions are deserialized into on the reader's thread.</summary>
    private NodePool? _inlinePool;

    private long _nextPosition;
    private long _ordinal;
    private long _lastBarrier;

    /// <summary>The log position of the last barrier's checkpoint marker (the part rule's).</summary>
    private long _lastBarrierPosition;
    private long _fillerFor;
    private Exception? _failure;
    private PipelineBarrier? _lastPipelineBarrier;

    /// <summary>
    /// A follower that reads from <paramref name="readFrom"/> with the database's last ordinal
    /// next: a new log's first record after the settings, or a checkpoint's resume position, whose
    /// barrier <paramref name="lastBarrier"/> and marker position
    /// <paramref name="lastBarrierPosition"/> the log-only rules start from. On
    /// <paramref name="stop"/> (the server's) the reader ends and the hand-offs stop waiting.
    /// </summary>
    public LogFollower(
        ISharedLog log,
        ServerOptions options,
        ClusterSettings settings,
        Database db,
        ThreadedPipeline pipeline,
        IIntentionBroadcast? broadcast,
        ServerMetrics metrics,
        ILogger logger,
        IFollowerHost host,
        long readFrom,
        long lastBarrier,
        long lastBarrierPosition,
        CancellationToken stop)
    {
        _log = log;
        _options = options;
        _settings = settings;
        _db = db;
        _pipeline = pipeline;
        _broadcast = broadcast;
        _metrics = metrics;
        _logger = logger;
        _host = host;
        _time = options.TimeProvider ?? TimeProvider.System;
        _cooperative = options.Cooperative;
        _stop = stop;
        _firstCopies = new FirstCopies(settings.StateWindow);
        _window = new StateWindow(db, settings.StateWindow);
        _window.Advance(db.LastAppended, db.Current);
        _ordinal = db.LastAppended;
        _nextPosition = readFrom;
        _lastBarrier = lastBarrier;
        _lastBarrierPosition = lastBarrierPosition;

        // A peer's block wakes the reader waiting at the tail, instead of its next poll.
        broadcast?.OnReceived(Wake);
    }

    /// <summary>The next log position the reader will look at.</summary>
    public long ReadPosition => Volatile.Read(ref _nextPosition);

    /// <summary>This server's own intentions the reader submitted itself, not through the submitter (<see cref="Dispatch"/>).</summary>
    public long SubmittedByReader => Interlocked.Read(ref _submittedByReader);

    /// <summary>Jobs back in the pool after their ordinal was submitted.</summary>
    public long JobsReturned => _jobs.Returned;

    /// <summary>The last ordinal the reader assigned.</summary>
    public long LastRead => Volatile.Read(ref _ordinal);

    /// <summary>Why the follower stopped (its reader, a deserializer or the submitter failed); null while it follows.</summary>
    public Exception? Failure => Volatile.Read(ref _failure);

    /// <summary>The reader's loop: complete once it stopped (it never faults; see <see cref="Failure"/>).</summary>
    public Task Reading => _reader;

    /// <summary>Starts the reader, and, threaded, the deserializers and the submitter.</summary>
    public void Start()
    {
        if (_cooperative)
        {
            // No thread, no Task.Run: the reader runs on this thread until its first wait, then
            // wherever the log completes its operations (the simulation's one thread).
            _inlinePool = new NodePool(NodePool.DefaultCapacity);
            _reader = ReadLoopAsync();
            return;
        }

        var n = _options.DeserializerThreads;
        _lanes = new HandOffQueue<Job>[n];
        _deserializers = new Thread[n];
        for (var i = 0; i < n; i++)
        {
            _lanes[i] = new HandOffQueue<Job>(_options.PipelineWindow);
            var lane = i;
            _deserializers[i] = new Thread(() => DeserializeLoop(lane)) { IsBackground = true, Name = $"deserialize-{i}" };
            _deserializers[i].Start();
        }

        _submitter = new Thread(SubmitLoop) { IsBackground = true, Name = "submit" };
        _submitter.Start();
        _reader = Task.Run(ReadLoopAsync);
    }

    /// <summary>
    /// After the stop and the reader's end: the deserializers and the submitter finish what they
    /// were given and end (the pipeline still runs, so the submitter's hand-offs complete).
    /// </summary>
    public void CompleteAndJoin()
    {
        foreach (var lane in _lanes)
        {
            lane.CompleteAdding();
        }

        _submitQueue.CompleteAdding();
        foreach (var t in _deserializers)
        {
            t.Join();
        }

        _submitter?.Join();
    }

    /// <summary>Releases every state of the window (the server stopped).</summary>
    public void ReleaseStates() => _window.Clear();

    /// <summary>An executor appended an intention, or a peer's block arrived: a reader waiting at the tail reads it now.</summary>
    public void Wake() => _tailWake.Wake();

    /// <summary>Final meld's thread, after <paramref name="ordinal"/>: the state window keeps the state, and deserializers waiting for it go on.</summary>
    public void StateMelded(long ordinal, DatabaseState current)
    {
        _window.Advance(ordinal, current);
        _stateAdded.Signal();
    }

    /// <summary>
    /// Final meld's thread: true (once) when <paramref name="ordinal"/> was a control record's (a
    /// filler, a checkpoint marker), which is melded as a no-op and not counted as an intention.
    /// </summary>
    public bool TakeControl(long ordinal) =>
        // Control records are rare: the final-meld thread looks them up only while one is pending
        // (a ConcurrentDictionary removal takes a bucket lock even when the key is absent).
        Volatile.Read(ref _pendingControl) != 0 && TakeControlSlow(ordinal);

    private bool TakeControlSlow(long ordinal)
    {
        if (!_controlOrdinals.TryRemove(ordinal, out _))
        {
            return false;
        }

        Interlocked.Decrement(ref _pendingControl);
        return true;
    }

    /// <summary>Marks an ordinal as a control record's (the reader calls it before dispatching the ordinal).</summary>
    private void MarkControl(long ordinal)
    {
        _controlOrdinals.TryAdd(ordinal, 0);
        Interlocked.Increment(ref _pendingControl);
    }

    private async Task ReadLoopAsync()
    {
        var ct = _stop;
        var buffer = new byte[_log.BlockSize];
        long tail = 0;
        var idleSince = _time.GetTimestamp();
        try
        {
            while (!ct.IsCancellationRequested)
            {
                var p = _nextPosition;
                if (p >= tail)
                {
                    tail = await _log.TailAsync(ct).ConfigureAwait(false);
                    if (p >= tail)
                    {
                        await MaybeFillAsync(idleSince, ct).ConfigureAwait(false);
                        await WaitAtTailAsync(idleSince, ct).ConfigureAwait(false);
                        continue;
                    }
                }

                ReadOnlyMemory<byte> block;
                bool owned;
                var sent = TakeBroadcast(p);
                if (sent is not null && _options.TrustBroadcast)
                {
                    block = sent;
                    owned = true;
                    _metrics.Add(Counter.BroadcastHits);
                }
                else
                {
                    // The log is the authority: unless the server trusts broadcast, a peer's block
                    // counts only when the log holds exactly those bytes at p, so it is read either way.
                    LogRead read;
                    try
                    {
                        read = await Startup.ReadSettledAsync(_log, p, buffer, _options.HoleTimeout, _time, ct).ConfigureAwait(false);
                    }
                    catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
                    {
                        throw BehindTrim(p, e);
                    }

                    var data = read.Kind == LogEntryKind.Data ? buffer.AsMemory(0, read.Length) : ReadOnlyMemory<byte>.Empty;
                    VerifyBroadcast(p, sent, read.Kind, data.Span);
                    if (read.Kind != LogEntryKind.Data)
                    {
                        Volatile.Write(ref _nextPosition, p + 1);
                        continue;
                    }

                    // Read into the loop's buffer: only what is kept past this block is copied.
                    block = data;
                    owned = false;
                    _metrics.Add(Counter.LogReads);
                }

                await HandleAsync(p, block, owned, ct).ConfigureAwait(false);
                Volatile.Write(ref _nextPosition, p + 1);
                _broadcast?.DiscardBelow(p + 1);
                idleSince = _time.GetTimestamp();
            }
        }
        catch (OperationCanceledException) when (ct.IsCancellationRequested)
        {
        }
        catch (Exception e)
        {
            _failure = e;
            _logger.StageFailed(e, _options.ServerId, "log reader");
        }
    }

    /// <summary>
    /// The reader at the tail: threaded on the system clock, it waits 1 ms while this server has
    /// transactions in flight or the log was busy in the last <see cref="s_quietAfter"/>, else
    /// <see cref="QuietPollMs"/> (<see cref="QuietPollWithBroadcastMs"/> with broadcast), and after
    /// <see cref="ServerOptions.TailIdleAfter"/> of quiet <see cref="ServerOptions.TailIdlePoll"/>;
    /// an executor's append, a peer's broadcast block or a caller waiting for an ordinal wakes it at
    /// once. By default an idle server polls its log 10 times a second. Cooperative or on another
    /// clock, it pauses 1 ms on that clock.
    /// </summary>
    private async Task WaitAtTailAsync(long idleSince, CancellationToken ct)
    {
        if (_cooperative || _time != TimeProvider.System)
        {
            await ServerClock.PauseAsync(_time, _cooperative, 1, ct).ConfigureAwait(false);
            return;
        }

        var quiet = _host.InFlight > 0 ? TimeSpan.Zero : _time.GetElapsedTime(idleSince);
        var pause = quiet < s_quietAfter ? 1
            : quiet >= _options.TailIdleAfter ? (int)Math.Clamp(_options.TailIdlePoll.TotalMilliseconds, 1, int.MaxValue)
            : _broadcast is null ? QuietPollMs : QuietPollWithBroadcastMs;
        await _tailWake.WaitAsync(pause, ct).ConfigureAwait(false);
    }

    /// <summary>
    /// With group meld, the first of a pair waits for its partner; when the log is quiet and this
    /// server has transactions waiting, it appends a filler so they are not held back.
    /// </summary>
    private async Task MaybeFillAsync(long idleSince, CancellationToken ct)
    {
        if (!_settings.GroupMeld || _ordinal % 2 == 0 || _fillerFor == _ordinal || _host.InFlight == 0 || _time.GetElapsedTime(idleSince) < _options.FillerAfter)
        {
            return;
        }

        _fillerFor = _ordinal;
        _metrics.Add(Counter.Fillers);
        await _log.AppendAsync(Blocks.Control(ControlKind.Filler, []), ct).ConfigureAwait(false);
    }

    /// <summary>An intention part, from the stash, a peer's broadcast or the log.</summary>
    private async Task<ReadOnlyMemory<byte>> PartAsync(long position, CancellationToken ct)
    {
        if (_parts.TryTake(position, out var stashed))
        {
            return stashed;
        }

        var sent = TakeBroadcast(position);
        if (sent is not null && _options.TrustBroadcast)
        {
            _metrics.Add(Counter.BroadcastHits);
            return sent;
        }

        var buffer = new byte[_log.BlockSize];
        try
        {
            var read = await _log.ReadAsync(position, buffer, ct).ConfigureAwait(false);
            var data = read.Kind == LogEntryKind.Data ? buffer.AsMemory(0, read.Length) : ReadOnlyMemory<byte>.Empty;
            VerifyBroadcast(position, sent, read.Kind, data.Span);
            return data;
        }
        catch (SharedLogException e) when (e.Status is LogStatus.Trimmed)
        {
            // Peers decoded it while the part was there: this server is behind the trim.
            throw BehindTrim(position, e);
        }
        catch (SharedLogException e) when (e.Status is LogStatus.Failed)
        {
            // The decoder rejects the intention for its missing part, as every server does.
            return ReadOnlyMemory<byte>.Empty;
        }
    }

    /// <summary>The block a peer broadcast for <paramref name="position"/>, if one arrived.</summary>
    private byte[]? TakeBroadcast(long position) =>
        _broadcast is not null && _broadcast.TryTake(position, out var sent) ? sent : null;

    /// <summary>
    /// Compares a peer's block for <paramref name="position"/> with what the log holds there (a
    /// data block's bytes, or a hole or junk fill): the same bytes count as a broadcast hit; any
    /// difference is a peer wrong about the position, counted and logged, and the log's block is
    /// the one used (docs/broadcast.md, "Trust").
    /// </summary>
    private void VerifyBroadcast(long position, byte[]? sent, LogEntryKind kind, ReadOnlySpan<byte> logged)
    {
        if (sent is null)
        {
            return;
        }

        if (kind == LogEntryKind.Data && logged.SequenceEqual(sent))
        {
            _metrics.Add(Counter.BroadcastHits);
            return;
        }

        _metrics.Add(Counter.BroadcastMismatches);
        _logger.BroadcastMismatch(_options.ServerId, position, kind == LogEntryKind.Data ? $"{sent.Length} B sent, {logged.Length} B logged, other bytes" : $"the log holds a {kind}");
    }

    /// <summary>The failure of a server that must read a trimmed position: it cannot go on, only start again from a checkpoint.</summary>
    private TrimmedLogException BehindTrim(long position, Exception inner) =>
        new($"server {_options.ServerId} must read log position @{position}, which the log has trimmed: the server is behind the trim and cannot go on from here; restart it, and it starts from the latest checkpoint", position, inner);
}
