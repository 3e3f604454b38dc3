// Group meld (stage thread id t + 1, when group meld is on): takes premeld's results in log
// order, pairs 2k − 1 with 2k and hands final meld one unit per ordinal. Relation to
// ReferencePipeline: this is its Group, Alone and Flush-of-a-half-pair for the premeld-first
// order; grouping first (PipelineOptions.GroupFirst, a group premelded as one) exists only in the
// reference pipeline, and this pipeline's constructor refuses it.

using Hyder.Tree.Meld;

namespace Hyder.Tree.Pipeline;

public sealed partial class ThreadedPipeline
{
    private readonly bool _grouping;
    private readonly MeldOperator? _group;

    // Group meld's hand-off to final meld: slot v mod window.
    private readonly Unit[] _units;
    private readonly long[] _unitOrdinals;

    // Group meld's position and the first half of the pair it holds (its thread's alone).
    private long _groupNext;
    private Intention? _held;
    private MeldOutcome _heldAbort;
    private long _heldOrdinal;
    private long _groupCaptured;

    /// <summary>
    /// What final meld does for one ordinal: meld <see cref="Intention"/> (which may be a group
    /// covering the next ordinal too), report the decision already made for it
    /// (<see cref="Covered"/>: the group melded at the previous ordinal), or skip it (aborted
    /// earlier, <see cref="Abort"/> says by whom).
    /// </summary>
    private struct Unit
    {
        public Intention? Intention;
        public MeldOutcome Abort;
        public bool Covered;
    }

    private bool UnitFree(long v) => Volatile.Read(ref _unitOrdinals[(int)(v % _units.Length)]) == -1;

    /// <summary>
    /// Group meld: pairs 2k − 1 and 2k as <see cref="ReferencePipeline"/> does and hands final
    /// meld one unit per ordinal.
    /// </summary>
    private Step GroupStep()
    {
        if (_stopping)
        {
            return Step.Ended;
        }

        var v = _groupNext;

        // Having finished a barrier, the stage reports at once, not when the next ordinal comes:
        // a checkpoint on a quiet log must complete.
        CaptureGroup(v);
        if (!HasResult(v))
        {
            var idle = Idle(v);
            if (idle == Step.Ended && _heldOrdinal != 0 && !_stopping)
            {
                // The end of the log inside a pair: the first goes alone (as ReferencePipeline.Flush).
                if (!UnitFree(_heldOrdinal))
                {
                    return Step.Blocked;
                }

                PutUnit(_heldOrdinal, _held, _heldAbort, covered: false);
                (_held, _heldOrdinal) = (null, 0);
                return Step.Progressed;
            }

            return idle;
        }

        if (v % 2 == 0 && (!UnitFree(v) || (_heldOrdinal == v - 1 && !UnitFree(v - 1))))
        {
            return Step.Blocked;
        }

        TakeResult(v, out var intention, out var abort);
        _groupNext = v + 1;
        _delay?.Invoke(PipelineStage.GroupMeld, v);
        if (v % 2 == 1)
        {
            (_held, _heldAbort, _heldOrdinal) = (intention, abort, v);
            return Step.Progressed;
        }

        if (_heldOrdinal != v - 1)
        {
            PutUnit(v, intention, abort, covered: false);
            return Step.Progressed;
        }

        var held = _held;
        var heldAbort = _heldAbort;
        (_held, _heldOrdinal) = (null, 0);
        if (held is not null && intention is not null && (held.IsValidated || IntentionValidator.IsValid(held)) && (intention.IsValidated || IntentionValidator.IsValid(intention))
            && MeldOperator.CanGroup(held, intention))
        {
            Invariant.Assert(_group!.ThreadId == _premeld.Length + 1, $"group meld runs with thread id {_group.ThreadId}, not t + 1");
            var outcome = _group.Group(held, intention, out var unit, out var decision);
            switch (decision)
            {
                case GroupDecision.Grouped:
                    PutUnit(v - 1, unit, default, covered: false);
                    PutUnit(v, null, default, covered: true);
                    break;
                case GroupDecision.SecondAborted:
                    PutUnit(v - 1, unit, default, covered: false);
                    PutUnit(v, null, outcome, covered: false);
                    break;
                default:
                    PutUnit(v - 1, null, outcome, covered: false);
                    PutUnit(v, null, outcome, covered: false);
                    break;
            }
        }
        else
        {
            PutUnit(v - 1, held, heldAbort, covered: false);
            PutUnit(v, intention, abort, covered: false);
        }

        return Step.Progressed;
    }

    /// <summary>The group stage reaches ordinal <paramref name="v"/>: at a barrier's next ordinal it reports its sequence (once).</summary>
    private void CaptureGroup(long v)
    {
        if (Volatile.Read(ref _capture) is { } capture && capture.Ordinal == v - 1 && _groupCaptured != v)
        {
            _groupCaptured = v;
            capture.SetGroup(_group!.NextEphemeralSequence);
        }
    }


    /// <summary>Hands final meld ordinal <paramref name="v"/>'s unit; its slot is free (checked before the step took its input).</summary>
    private void PutUnit(long v, Intention? intention, in MeldOutcome abort, bool covered)
    {
        Invariant.Assert(v < _groupNext && v > _groupNext - 3, $"group meld hands final meld #{v} while at #{_groupNext}");
        var slot = (int)(v % _units.Length);
        if (_unitOrdinals[slot] != -1)
        {
            ThrowHelper.ThrowInvariant($"the unit slot of #{v} is still taken by #{_unitOrdinals[slot]}");
        }

        _units[slot] = new Unit { Intention = intention, Abort = abort, Covered = covered };
        Volatile.Write(ref _unitOrdinals[slot], v);
        _signals[FinalStage].Signal();
    }
}
