using Hyder.Log;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Server;

/// <summary>The log side: reading blocks in order, numbering intentions, deserializing, submitting.</summary>
public sealed partial class TransactionServer
{
    private readonly HandOffQueue<Job> _submitQueue = new(4096);
    private readonly PartStash _parts = new();

    /// <summary>The first copy of each recent intention, for the duplicate-copy rule.</summary>
    private readonly FirstCopies _firstCopies;
    private HandOffQueue<Job>[] _lanes = [];
    private long _nextPosition;
    private long _ordinal;
    private long _lastBarrier;
    private long _fillerFor;

    private Exception? _failure;
    private Tree.Pipeline.PipelineBarrier? _lastPipelineBarrier;

    /// <summary>Deserializers signal the submitter when a job is ready.</summary>
    private readonly Tree.Pipeline.StageSignal _jobReady = new();

    /// <summary>Final meld signals deserializers waiting for a snapshot state.</summary>
    private readonly Tree.Pipeline.StageSignal _stateAdded = new();

    /// <summary>Wakes the reader waiting at the tail (an executor appended, a peer's block arrived).</summary>
    private readonly TailWake _tailWake = new();

    /// <summary>How long the log must have been quiet, with nothing in flight here, before the reader polls its tail less often.</summary>
    private static readonly TimeSpan s_quietAfter = TimeSpan.FromMilliseconds(50);

    /// <summary>The reader's poll period at the tail of a quiet log (a local append wakes it at once).</summary>
    private const int QuietPollMs = 20;

    /// <summary>
    /// The same with intention broadcast: a peer's block wakes the reader at once, so the poll only
    /// catches what broadcast lost (a peer not connected, a full queue) and can be rarer.
    /// </summary>
    private const int QuietPollWithBroadcastMs = 100;

    /// <summary>Cooperative mode: the pool intentions are deserialized into on the reader's thread.</summary>
    private NodePool? _inlinePool;

    /// <summary>The next log position the reader will look at.</summary>
    public long ReadPosition => Volatile.Read(ref _nextPosition);

    /// <summary>The last ordinal the reader assigned.</summary>
    public long LastRead => Volatile.Read(ref _ordinal);

    private async Task ReadLoopAsync()
    {
        var ct = _stop.Token;
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
                if (_broadcast is not null && _broadcast.TryTake(p, out var sent))
                {
                    block = sent;
                    owned = true;
                    _metrics.Add(Counter.BroadcastHits);
                }
                else
                {
                    LogRead read;
                    try
                    {
                        read = await Startup.ReadSettledAsync(_log, p, buffer, _options.HoleTimeout, _time, ct).ConfigureAwait(false);
                    }
                    catch (SharedLogException e) when (e.Status == LogStatus.Trimmed)
                    {
                        throw BehindTrim(p, e);
                    }

                    if (read.Kind != LogEntryKind.Data)
                    {
                        Volatile.Write(ref _nextPosition, p + 1);
                        continue;
                    }

                    // Read into the loop's buffer: only what is kept past this block is copied.
                    block = buffer.AsMemory(0, read.Length);
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
    /// <see cref="QuietPollMs"/> (<see cref="QuietPollWithBroadcastMs"/> with broadcast), and an
    /// executor's append or a peer's broadcast block wakes it at once; an idle server polls its log
    /// 50 (10) times a second. Cooperative or on another clock, it pauses 1 ms on that clock.
    /// </summary>
    private async Task WaitAtTailAsync(long idleSince, CancellationToken ct)
    {
        if (_cooperative || _time != TimeProvider.System)
        {
            await PauseAsync(1, ct).ConfigureAwait(false);
            return;
        }

        var pause = InFlight > 0 || _time.GetElapsedTime(idleSince) < s_quietAfter ? 1 : _broadcast is null ? QuietPollMs : QuietPollWithBroadcastMs;
        await _tailWake.WaitAsync(pause, ct).ConfigureAwait(false);
    }

    /// <summary>An executor appended an intention, or a peer's block arrived: a reader waiting at the tail reads it now.</summary>
    private void WakeReader() => _tailWake.Wake();

    /// <summary>
    /// With group meld, the first of a pair waits for its partner; when the log is quiet and this
    /// server has transactions waiting, it appends a filler so they are not held back.
    /// </summary>
    private async Task MaybeFillAsync(long idleSince, CancellationToken ct)
    {
        if (!_settings.GroupMeld || _ordinal % 2 == 0 || _fillerFor == _ordinal || InFlight == 0 || _time.GetElapsedTime(idleSince) < _options.FillerAfter)
        {
            return;
        }

        _fillerFor = _ordinal;
        _metrics.Add(Counter.Fillers);
        await _log.AppendAsync(Blocks.Control(ControlKind.Filler, []), ct).ConfigureAwait(false);
    }

    /// <summary>
    /// One block in log order. <paramref name="owned"/> false: the block lives in the reader's
    /// buffer, so what outlives this call (a stashed part, a peer's final block) is copied.
    /// </summary>
    private async Task HandleAsync(long position, ReadOnlyMemory<byte> block, bool owned, CancellationToken ct)
    {
        if (!Blocks.TryParse(block.Span, out var kind, out var error))
        {
            _metrics.Add(Counter.SkippedBlocks);
            _logger.SkippedBlock(_options.ServerId, position, error);
            return;
        }

        switch (kind)
        {
            case BlockKind.IntentionPart:
                _parts.Add(position, owned ? block : block.ToArray());
                return;
            case BlockKind.Intention:
                await ReadIntentionAsync(position, block, owned, ct).ConfigureAwait(false);
                return;
            case BlockKind.Control:
                ReadControl(position, block.Span);
                return;
            case BlockKind.Checkpoint:
                // Checkpoints are for restarting servers; they take no ordinal. The trim rule counts them.
                NoteCheckpoint(position, block.Span);
                return;
            default:
                return;
        }
    }

    private async Task ReadIntentionAsync(long position, ReadOnlyMemory<byte> block, bool owned, CancellationToken ct)
    {
        var v = ++_ordinal;
        var job = new Job { Ordinal = v, Position = position };
        IntentionHeader header;
        try
        {
            header = IntentionDecoder.ReadHeader(block.Span);
        }
        catch (IntentionFormatException e)
        {
            job.IsDecided = true;
            job.Decision = Job.Abort(AbortCause.Rejected, e.Message);
            Dispatch(job);
            return;
        }

        job.SnapshotSequence = header.SnapshotSequence;
        var firstCopy = _firstCopies.FirstCopyOf(header.Nonce, v);
        var misplaced = IntentionReferences.Check(header, v, position, _settings.GroupMeld);
        if (_localByNonce.TryRemove(header.Nonce, out var local))
        {
            job.Local = local;
            job.Intention = local.Intention;
            foreach (var part in header.PartPositions)
            {
                _parts.Forget(part);
            }
        }
        else if (misplaced is null && PartBeforeBarrier(header) is null)
        {
            // A peer's intention is decoded later, on a deserializer thread: it keeps its bytes.
            job.Final = owned ? block : block.ToArray();
            var parts = new ReadOnlyMemory<byte>[header.PartPositions.Count];
            for (var i = 0; i < parts.Length; i++)
            {
                parts[i] = await PartAsync(header.PartPositions[i], ct).ConfigureAwait(false);
            }

            job.Parts = parts;
        }

        var s = header.SnapshotSequence;
        if (misplaced is not null)
        {
            Decide(job, Job.Abort(AbortCause.Rejected, misplaced));
        }
        else if (v - 1 - s > _settings.StateWindow)
        {
            Decide(job, Job.Abort(AbortCause.SnapshotTooOld, $"snapshot #{s} is {v - 1 - s} intentions behind intention #{v}; the cluster keeps {_settings.StateWindow}"));
        }
        else if (s < _lastBarrier)
        {
            Decide(job, Job.Abort(AbortCause.SnapshotBeforeCheckpoint, $"snapshot #{s} precedes the checkpoint barrier #{_lastBarrier}"));
        }
        else if (firstCopy is { } first)
        {
            Decide(job, Job.Abort(AbortCause.Rejected, $"intention #{v} @{position} is a second copy of intention #{first} (nonce {header.Nonce:x16}); the first copy decided it"));
        }
        else if (PartBeforeBarrier(header) is { } part)
        {
            Decide(job, Job.Abort(AbortCause.Rejected, $"intention #{v} @{position} has a part @{part} before the checkpoint barrier's marker @{_lastBarrierPosition}"));
        }

        Dispatch(job);
    }

    private static void Decide(Job job, MeldOutcome decision)
    {
        job.IsDecided = true;
        job.Decision = decision;
        if (job.Local is { } local)
        {
            // It will never be melded: give back what it holds.
            local.Intention.ReleasePins();
        }

        job.Intention = null;
    }

    private async Task<ReadOnlyMemory<byte>> PartAsync(long position, CancellationToken ct)
    {
        if (_parts.TryTake(position, out var stashed))
        {
            return stashed;
        }

        if (_broadcast is not null && _broadcast.TryTake(position, out var sent))
        {
            return sent;
        }

        var buffer = new byte[_log.BlockSize];
        try
        {
            var read = await _log.ReadAsync(position, buffer, ct).ConfigureAwait(false);
            return read.Kind == LogEntryKind.Data ? buffer.AsMemory(0, read.Length) : ReadOnlyMemory<byte>.Empty;
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

    private void ReadControl(long position, ReadOnlySpan<byte> block)
    {
        if (!ControlRecord.TryDecode(Blocks.ControlPayload(block), out var control, out var body))
        {
            _metrics.Add(Counter.SkippedBlocks);
            _logger.SkippedBlock(_options.ServerId, position, "a control record of an unknown kind");
            return;
        }

        switch (control)
        {
            case ControlKind.Settings:
                return;
            case ControlKind.Filler:
                MarkControl(++_ordinal);
                Dispatch(new Job { Ordinal = _ordinal, Position = position, IsDecided = true, Decision = Job.NoOp });
                return;
            case ControlKind.CheckpointMarker:
                var v = ++_ordinal;
                MarkControl(v);
                var job = new Job { Ordinal = v, Position = position, IsDecided = true, Decision = Job.NoOp };
                var id = body.Length >= 8 ? BitConverter.ToUInt64(body) : 0;
                _checkpointRequests.TryGetValue(id, out var request);
                if (!_settings.GroupMeld || v % 2 == 0)
                {
                    job.IsBarrier = true;
                    job.Checkpoint = request;
                    _lastBarrier = v;
                    _lastBarrierPosition = position;
                }
                else if (request is not null)
                {
                    // An odd marker ends no pair: ask again.
                    _ = AppendMarkerAsync(request);
                }

                Dispatch(job);
                return;
        }
    }

    private void Dispatch(Job job)
    {
        var ct = _stop.Token;
        if (_cooperative)
        {
            // Every ordinal before this one has been submitted and the pipeline ran until it could
            // not progress, so the snapshot has been melded (or never will be): decode and submit now.
            ct.ThrowIfCancellationRequested();
            if (!job.IsDecided && job.Local is null)
            {
                Deserialize(job, _inlinePool!);
            }

            Submit(job);
            DeliverOutcomes();
            return;
        }

        _submitQueue.Add(job, ct);
        if (job.IsDecided || job.Local is not null)
        {
            Volatile.Write(ref job.Done, true);
            return;
        }

        _lanes[job.Ordinal % _lanes.Length].Add(job, ct);
    }

    private void DeserializeLoop(int lane)
    {
        var pool = new NodePool(NodePool.DefaultCapacity);
        try
        {
            while (_lanes[lane].TryTake(out var job))
            {
                Deserialize(job, pool);
                Volatile.Write(ref job.Done, true);
                _jobReady.Signal();
            }
        }
        catch (Exception e)
        {
            _failure ??= e;
            _logger.DeserializerFailed(e, _options.ServerId, lane);
        }
    }

    private void Deserialize(Job job, NodePool pool)
    {
        var s = job.SnapshotSequence;
        DatabaseState? snapshot;
        var wait = default(Tree.Pipeline.StageWait);
        while (true)
        {
            var seen = _stateAdded.Version;
            // Progress first: a state added between the lookup and this read must not look
            // missing. Once final meld has passed s, the state of sequence s exists or never will
            // (s was not a committed ordinal here, nor on any server computing the same states).
            var melded = _pipeline.LastMelded;
            if ((snapshot = _window.TryPin(s)) is not null)
            {
                break;
            }

            // Cooperative: everything before this ordinal has been melded but the first of a group
            // meld pair waiting for this one; a snapshot that is missing now never comes.
            if (melded >= s || _stop.IsCancellationRequested || _cooperative)
            {
                job.IsDecided = true;
                job.Decision = Job.Abort(AbortCause.Rejected, $"intention #{job.Ordinal} names snapshot #{s}, which is not a committed state");
                return;
            }

            wait.Once(_stateAdded, seen);
        }

        Intention intention;
        try
        {
            intention = IntentionDecoder.Decode(job.Final.Span, job.Parts, snapshot, pool);
        }
        catch (IntentionFormatException e)
        {
            job.IsDecided = true;
            job.Decision = Job.Abort(AbortCause.Rejected, e.Message);
            _metrics.Add(Counter.RejectedBlocks);
            return;
        }
        finally
        {
            _db.Release(snapshot);
        }

        // Sealed and validated here, in parallel, never on the final-meld thread (DESIGN §6): the
        // seal depends only on the ordinal and position, and the validator's verdict and message
        // only on the intention and its snapshot, so every server decides it alike.
        intention.Seal(job.Ordinal, job.Position);
        try
        {
            IntentionValidator.Validate(intention);
            job.Intention = intention;
        }
        catch (IntentionRejectedException e)
        {
            intention.ReleasePins();
            job.IsDecided = true;
            job.Decision = Job.Abort(AbortCause.Rejected, e.Message);
            _metrics.Add(Counter.RejectedBlocks);
        }
    }

    private void SubmitLoop()
    {
        try
        {
            while (_submitQueue.TryTake(out var job))
            {
                var wait = default(Tree.Pipeline.StageWait);
                while (true)
                {
                    var seen = _jobReady.Version;
                    if (Volatile.Read(ref job.Done))
                    {
                        break;
                    }

                    wait.Once(_jobReady, seen);
                }

                Submit(job);
            }
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            _failure ??= e;
            _logger.StageFailed(e, _options.ServerId, "submitter");
        }
    }

    /// <summary>Hands one ordinal to the pipeline, in log order (the submitter thread, or the reader in cooperative mode).</summary>
    private void Submit(Job job)
    {
        var v = job.Ordinal;
        if (job.Local is { } local)
        {
            local.Ordinal = v;
            ref var slot = ref _localByOrdinal[v % _localByOrdinal.Length];
            if (slot is not null)
            {
                throw new InvalidOperationException($"the outcome slot of #{v} is still taken by #{slot.Ordinal}");
            }

            Volatile.Write(ref slot, local);
        }

        if (job.Intention is { } intention)
        {
            _db.Append(intention, v, job.Position);
            _pipeline.Submit(intention);
        }
        else if (job.IsBarrier)
        {
            // One barrier is captured at a time; the previous one needs only ordinals
            // already submitted, so it completes.
            var spin = default(SpinWait);
            while (_lastPipelineBarrier is { IsComplete: false })
            {
                if (_cooperative)
                {
                    throw new InvalidOperationException($"the checkpoint barrier at #{_lastPipelineBarrier.Ordinal} is incomplete at the next barrier #{v}");
                }

                spin.SpinOnce(sleep1Threshold: 10);
            }

            var barrier = _pipeline.SubmitBarrier(v);
            _lastPipelineBarrier = barrier;
            _ = WriteCheckpointAsync(barrier, job);
        }
        else
        {
            _pipeline.SubmitDecided(v, job.Decision);
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
}
