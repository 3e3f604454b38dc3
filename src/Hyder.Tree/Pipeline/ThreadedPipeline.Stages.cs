// How the stages run: each on its own thread (spinning, then blocking on its StageSignal), or
// cooperatively on the submitting caller's thread. Relation to ReferencePipeline: the reference
// runs the stages in one fixed order per intention; here every stage steps on its own, and the
// states do not depend on the interleaving because each stage computes what it computes on its
// own thread, in ordinal order. The stage order premeld, group meld, final meld is the only one
// here: grouping first (PipelineOptions.GroupFirst) exists only in the reference pipeline.

namespace Hyder.Tree.Pipeline;

public sealed partial class ThreadedPipeline
{
    // One signal per stage (0..t−1 premeld lanes, t final meld, t + 1 group meld) and one for
    // the submitter and WaitFor callers: who makes a stage's input ready signals it.
    private readonly StageSignal[] _signals;
    private readonly StageSignal _producer = new();
    private readonly bool _spinOnly;
    private bool _pumping;

    /// <summary>What one attempt of a stage did.</summary>
    private enum Step
    {
        /// <summary>It finished an ordinal (or handed on a held one).</summary>
        Progressed,

        /// <summary>Its input is not there yet.</summary>
        Blocked,

        /// <summary>The pipeline stopped, or its next ordinal will never come.</summary>
        Ended,
    }

    /// <summary>Stage k: 0..t−1 premeld lanes, t final meld, t + 1 group meld.</summary>
    private Step StepStage(int stage)
    {
        var t = _premeld.Length;
        return stage < t ? PremeldStep(stage) : stage == t ? FinalStep() : GroupStep();
    }

    private int FinalStage => _premeld.Length;

    private int GroupStage => _premeld.Length + 1;

    /// <summary>Wakes every stage and waiter (the pipeline ends or fails).</summary>
    private void SignalAll()
    {
        foreach (var s in _signals)
        {
            s.Signal();
        }

        _producer.Signal();
    }

    /// <summary>
    /// A stage thread: one step after another. While its input is not there it busy-spins
    /// (<see cref="ResolvedThreading.SpinOnly"/>), or spins a few rounds and then blocks until the
    /// stage that makes its input signals it.
    /// </summary>
    private void StageLoop(int stage)
    {
        var signal = _signals[stage];
        var wait = default(StageWait);
        while (true)
        {
            var seen = signal.Version;
            switch (StepStage(stage))
            {
                case Step.Progressed:
                    wait.Reset();
                    continue;
                case Step.Ended:
                    return;
            }

            if (_spinOnly)
            {
                Thread.SpinWait(30);
            }
            else
            {
                wait.Once(signal, seen);
            }
        }
    }

    /// <summary>
    /// Cooperative mode: runs the stages on the caller's thread, round robin in a fixed order
    /// (premeld lanes, group meld, final meld), until none can progress. The states do not
    /// depend on the order: each stage computes what it computes on its own thread. True when a
    /// stage progressed. A stage that throws stops the pipeline as a failed stage thread does.
    /// </summary>
    private bool Pump()
    {
        if (_pumping)
        {
            // A hook that submits from inside a stage step (a Melded callback) must not re-enter the stages.
            return false;
        }

        _pumping = true;
        var any = false;
        try
        {
            var t = _premeld.Length;
            bool progressed;
            do
            {
                progressed = false;
                for (var lane = 0; lane < t; lane++)
                {
                    progressed |= StepStage(lane) == Step.Progressed;
                }

                if (_grouping)
                {
                    progressed |= StepStage(t + 1) == Step.Progressed;
                }

                progressed |= StepStage(t) == Step.Progressed;
                any |= progressed;
            }
            while (progressed && !_stopping);
        }
        catch (Exception e)
        {
            Fail(e);
        }
        finally
        {
            _pumping = false;
        }

        return any;
    }

    /// <summary>Blocked, or ended when the pipeline stopped or ordinal <paramref name="v"/> will never be submitted.</summary>
    private Step Idle(long v) => _stopping || v > Volatile.Read(ref _end) ? Step.Ended : Step.Blocked;
}
