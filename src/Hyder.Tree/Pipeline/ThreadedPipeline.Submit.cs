// The producer side: one caller hands the pipeline intentions, decided ordinals and barriers in
// log order and waits for final meld. Relation to ReferencePipeline: its Process and Flush run
// every stage for an intention before they return; here Submit only places the intention in its
// premeld lane's slot (or the group or final stage's input when t = 0) and returns, and WaitFor
// waits for final meld. A barrier is the same rule as there (no premeld input older than it).
// Grouping first (PipelineOptions.GroupFirst) exists only in the reference pipeline.

using Hyder.Tree.Meld;

namespace Hyder.Tree.Pipeline;

public sealed partial class ThreadedPipeline
{
    private long _lastSubmitted;
    private long _barrier;
    private PipelineBarrier? _capture;

    /// <summary>
    /// Hands the next appended intention to the pipeline (one producer, log order). Waits while
    /// the window is full.
    /// </summary>
    public void Submit(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (_requireValidated && !intention.IsValidated)
        {
            ThrowHelper.ThrowInvariant($"{intention} was submitted unvalidated; this pipeline's final meld does not validate");
        }

        Put(intention.Ordinal, intention, default);
    }

    /// <summary>
    /// Hands the pipeline an ordinal whose decision was made before meld, the same way on every
    /// server: a no-op that commits without changing the state (a filler, a checkpoint marker;
    /// <paramref name="outcome"/> committed), or an abort (a block rejected by the decoder, a
    /// snapshot older than the cluster keeps). No stage touches it; final meld reports it.
    /// </summary>
    public void SubmitDecided(long ordinal, in MeldOutcome outcome) => Put(ordinal, null, outcome);

    /// <summary>
    /// Submits a checkpoint marker at <paramref name="ordinal"/> (a committed no-op) and makes the
    /// barrier after it: from here on, an intention whose premeld input would be older than the
    /// barrier is not premelded, on every server alike, so a server restarted from the state at
    /// the barrier computes exactly what its peers compute. With group meld the marker must end a
    /// pair (an even ordinal): the state after an odd one does not exist on every server. The returned barrier completes with every stage's next ephemeral
    /// sequence at the barrier and the state there (pinned: release it with
    /// <see cref="PipelineBarrier.Release"/>).
    /// </summary>
    public PipelineBarrier SubmitBarrier(long ordinal)
    {
        if (_capture is { IsComplete: false })
        {
            ThrowHelper.ThrowInvalidOperation($"the barrier at #{_capture.Ordinal} is still being captured");
        }

        if (_grouping && ordinal % 2 == 1)
        {
            ThrowHelper.ThrowArgument(nameof(ordinal), $"with group meld a barrier must end a pair; #{ordinal} is odd (submit it as a plain no-op)");
        }

        var b = ordinal;
        var capture = new PipelineBarrier(_database, b, _premeld.Length, _grouping, _cooperative);
        var t = _premeld.Length;
        Volatile.Write(ref _capture, capture);
        Interlocked.MemoryBarrier();
        for (var lane = 0; lane < t; lane++)
        {
            // A lane that premelds nothing up to the barrier, or already finished its last
            // ordinal before it, waits for one after it (not submitted yet): its counter is
            // stable. Otherwise the lane reports when it gets there (whichever is first counts).
            var last = LastOfLaneUpTo(lane, b);
            if (last <= _schedule.Start || Volatile.Read(ref _laneDone[lane]) >= last)
            {
                capture.SetPremeld(lane, _premeld[lane].NextEphemeralSequence);
            }
        }

        Volatile.Write(ref _barrier, b);
        Put(ordinal, null, new MeldOutcome { Committed = true });
        return capture;
    }

    private long LastOfLaneUpTo(int lane, long b)
    {
        var t = _premeld.Length;
        var v = b - (((b % t) - lane + t) % t);
        return v;
    }

    /// <summary>
    /// True when <see cref="Submit"/> of the next ordinal, <paramref name="v"/>, would not wait for
    /// room (its input slot is free and it is within the window final meld allows): a producer that
    /// must not block (the server's log reader, a thread-pool thread) hands it over only then.
    /// </summary>
    public bool HasRoomFor(long v)
    {
        var (lane, slot) = InputSlot(v);
        return v == _lastSubmitted + 1 && Admits(v, lane, slot);
    }

    /// <summary>The input lane and slot ordinal <paramref name="v"/> goes to.</summary>
    private (int Lane, int Slot) InputSlot(long v)
    {
        var lane = _premeld.Length == 0 ? 0 : _schedule.ThreadOf(v);
        return (lane, (int)(v / Math.Max(_premeld.Length, 1) % _inputs[lane].Length));
    }

    /// <summary>True when <paramref name="v"/> is within final meld's window and its input slot is free.</summary>
    private bool Admits(long v, int lane, int slot) =>
        v - Volatile.Read(ref _lastMelded) <= _results.Length && Volatile.Read(ref _inputOrdinals[lane][slot]) < 0;

    private void Put(long v, Intention? intention, in MeldOutcome decided)
    {
        if (v != _lastSubmitted + 1)
        {
            ThrowHelper.ThrowInvalidOperation($"intention #{v} submitted out of order: the next is #{_lastSubmitted + 1}");
        }

        var (lane, slot) = InputSlot(v);
        var wait = default(StageWait);
        while (true)
        {
            var seen = _producer.Version;
            if (Admits(v, lane, slot))
            {
                break;
            }

            ThrowIfFailed();
            if (_cooperative)
            {
                if (!Pump())
                {
                    ThrowHelper.ThrowInvariant($"the cooperative pipeline cannot take #{v}: its window is full and no stage can progress");
                }

                continue;
            }

            wait.Once(_producer, seen);
        }

        _inputs[lane][slot] = intention;
        _inputDecided[lane][slot] = decided;
        _inputBarriers[lane][slot] = _barrier;
        Volatile.Write(ref _inputOrdinals[lane][slot], v);
        _lastSubmitted = v;
        _signals[_premeld.Length > 0 ? lane : _grouping ? GroupStage : FinalStage].Signal();
        if (_cooperative)
        {
            Pump();
            ThrowIfFailed();
        }
    }

    /// <summary>Waits until final meld has finished intention <paramref name="ordinal"/>.</summary>
    public void WaitFor(long ordinal)
    {
        var wait = default(StageWait);
        while (true)
        {
            var seen = _producer.Version;
            if (Volatile.Read(ref _lastMelded) >= ordinal)
            {
                break;
            }

            ThrowIfFailed();
            if (_cooperative)
            {
                if (!Pump())
                {
                    ThrowHelper.ThrowInvalidOperation($"#{ordinal} cannot be melded yet: the cooperative pipeline holds nothing that leads to it");
                }

                continue;
            }

            wait.Once(_producer, seen);
        }
    }
}
