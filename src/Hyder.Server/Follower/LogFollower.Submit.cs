using Hyder.Server.Core;
using Hyder.Tree;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;
using Hyder.Tree.Pipeline;
using Hyder.Tree.Serialization;

namespace Hyder.Server.Follower;

/// <summary>From an ordinal to the pipeline: the deserializer lanes, the submitter, and the hand-off in log order.</summary>
internal sealed partial class LogFollower
{
    private void Dispatch(Job job)
    {
        var ct = _stop;
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
            _host.SubmitReturned();
            return;
        }

        if (job.Local is not null && !job.IsDecided && Volatile.Read(ref _queuedForSubmit) == 0 && _pipeline.HasRoomFor(job.Ordinal))
        {
            // This server's own intention, ready as it is read, with nothing queued ahead of it for
            // the submitter (which therefore is not inside Submit) and room in the pipeline: the
            // reader hands it over itself, saving the submitter's wake-up and a hand-off per commit.
            // The order holds: every earlier ordinal has been submitted.
            Submit(job);
            Interlocked.Increment(ref _submittedByReader);
            return;
        }

        Interlocked.Increment(ref _queuedForSubmit);
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
            Interlocked.CompareExchange(ref _failure, e, null);
            _logger.DeserializerFailed(e, _options.ServerId, lane);

            // The submitter may be waiting for a job of this lane, which will never be done.
            _jobReady.Signal();
        }
    }

    private void Deserialize(Job job, NodePool pool)
    {
        var s = job.SnapshotSequence;
        DatabaseState? snapshot;
        var wait = default(StageWait);
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
            intention = IntentionDecoder.Decode(job.Final.Span, job.Parts, snapshot, pool, _db.Values);
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
                var wait = default(StageWait);
                while (true)
                {
                    var seen = _jobReady.Version;
                    if (Volatile.Read(ref job.Done))
                    {
                        break;
                    }

                    if (Volatile.Read(ref _failure) is not null)
                    {
                        // A deserializer failed (the follower's Failure): its jobs are never done.
                        return;
                    }

                    wait.Once(_jobReady, seen);
                }

                Submit(job);
                Interlocked.Decrement(ref _queuedForSubmit);
            }
        }
        catch (Exception e) when (e is not OperationCanceledException)
        {
            Interlocked.CompareExchange(ref _failure, e, null);
            _logger.StageFailed(e, _options.ServerId, "submitter");
        }
    }

    /// <summary>Hands one ordinal to the pipeline, in log order (the submitter thread, or the reader in cooperative mode).</summary>
    private void Submit(Job job)
    {
        var v = job.Ordinal;
        if (job.Local is { } local)
        {
            _host.FileLocal(local, v);
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
            _host.BarrierSubmitted(barrier, job);
        }
        else
        {
            _pipeline.SubmitDecided(v, job.Decision);
        }

        if (!job.IsBarrier)
        {
            // Submitted: nothing refers to the job any more (the pipeline holds the intention).
            _jobs.Return(job);
        }
    }
}
