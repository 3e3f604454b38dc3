using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Tree.Meld;
using Hyder.Tree.Serialization;

namespace Hyder.Server.Follower;

/// <summary>One block in log order: its kind, its ordinal, and the rules every server applies from the log alone (docs/server.md).</summary>
internal sealed partial class LogFollower
{
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
                _host.CheckpointRead(position, block.Span);
                return;
            default:
                return;
        }
    }

    private async Task ReadIntentionAsync(long position, ReadOnlyMemory<byte> block, bool owned, CancellationToken ct)
    {
        var v = ++_ordinal;
        var job = _jobs.Rent();
        job.Ordinal = v;
        job.Position = position;
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
        if (_host.TakeLocal(header.Nonce) is { } local)
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
                var request = _host.FindCheckpointRequest(id);
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
                    _host.AskForCheckpointAgain(request);
                }

                Dispatch(job);
                return;
        }
    }

    /// <summary>
    /// The part rule, from the log alone: an intention after a checkpoint barrier with a part
    /// before the barrier's marker is rejected (returns that part's position), so a server started
    /// from the checkpoint, which has nothing below the marker, decides it as its peers did. A
    /// transaction of this cluster never has one: its snapshot precedes the barrier, and it is
    /// aborted for that first.
    /// </summary>
    private long? PartBeforeBarrier(IntentionHeader header)
    {
        foreach (var part in header.PartPositions)
        {
            if (part < _lastBarrierPosition)
            {
                return part;
            }
        }

        return null;
    }
}
