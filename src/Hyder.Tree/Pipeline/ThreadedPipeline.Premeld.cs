// Premeld: lane i (stage thread id i + 1) takes intentions v with v mod t = i from its input
// slots and premelds each against the state after v − t·d − 1, which final meld publishes.
// Relation to ReferencePipeline: this is its Premeld (the same PremeldSchedule, the same
// validation first, the same barrier rule), run for intention v on lane v mod t instead of inline
// before final meld. Premeld of a group (ReferencePipeline with GroupFirst) exists only in the
// reference: here premeld always runs before group meld.

using Hyder.Tree.Meld;

namespace Hyder.Tree.Pipeline;

public sealed partial class ThreadedPipeline
{
    private readonly MeldOperator[] _premeld;

    // The submitter's hand-off to each lane (lane 0 serves final or group meld directly when t = 0):
    // slot v / t mod window holds intention v (or its decision) and the barrier it was submitted under.
    private readonly Intention?[][] _inputs;
    private readonly MeldOutcome[][] _inputDecided;
    private readonly long[][] _inputBarriers;
    private readonly long[][] _inputOrdinals;

    // Premeld's hand-off to the next stage: slot v mod window.
    private readonly Intention?[] _results;
    private readonly MeldOutcome[] _premeldAborts;
    private readonly long[] _resultOrdinals;

    // Each lane's next ordinal (its thread's alone) and the last it finished (read by SubmitBarrier).
    private readonly long[] _premeldNext;
    private readonly long[] _laneDone;

    /// <summary>
    /// Premeld lane <paramref name="lane"/>: intention v (v mod t = lane) against the state after
    /// v − t·d − 1, once both are there.
    /// </summary>
    private Step PremeldStep(int lane)
    {
        if (_stopping)
        {
            return Step.Ended;
        }

        var op = _premeld[lane];
        var inputs = _inputs[lane];
        var ordinals = _inputOrdinals[lane];
        var t = _premeld.Length;
        var v = _premeldNext[lane];
        var slot = (int)(v / t % inputs.Length);
        if (Volatile.Read(ref ordinals[slot]) != v)
        {
            return Idle(v);
        }

        var m = _schedule.InputOf(v);
        var retains = _schedule.Retains(m);
        var stateSlot = (int)(m % _states.Length);
        if (retains && Volatile.Read(ref _stateOrdinals[stateSlot]) != m)
        {
            return Idle(v);
        }

        Invariant.Assert(v % t == lane && op.ThreadId == lane + 1, $"premeld lane {lane} (thread id {op.ThreadId}) took #{v}");
        var intention = inputs[slot];
        var abort = _inputDecided[lane][slot];
        var barrier = _inputBarriers[lane][slot];
        inputs[slot] = null;
        Volatile.Write(ref ordinals[slot], -1);
        _delay?.Invoke(PipelineStage.Premeld, v);

        var result = intention;
        if (retains)
        {
            var input = _states[stateSlot]!;
            Invariant.Assert(input.Sequence <= m && input.Pins > 0, $"premeld of #{v} got {input} ({input.Pins} pins) as the state after #{m}");
            if (intention is not null && m >= barrier && _schedule.Applies(v, intention.LatestSnapshotSequence, input) && IntentionValidator.IsValid(intention))
            {
                abort = op.Premeld(intention, input, out result);
            }

            _states[stateSlot] = null;
            _database.Release(input);
        }

        var r = (int)(v % _results.Length);
        Invariant.Assert(Volatile.Read(ref _resultOrdinals[r]) == -1, $"premeld's result slot of #{v} is still taken by #{_resultOrdinals[r]}");
        _results[r] = result;
        _premeldAborts[r] = abort;
        Volatile.Write(ref _resultOrdinals[r], v);
        Volatile.Write(ref _laneDone[lane], v);
        _premeldNext[lane] = v + t;
        _signals[_grouping ? GroupStage : FinalStage].Signal();
        _producer.Signal();
        Interlocked.MemoryBarrier();
        if (Volatile.Read(ref _capture) is { } capture && v <= capture.Ordinal && v + t > capture.Ordinal)
        {
            capture.SetPremeld(lane, op.NextEphemeralSequence);
        }

        return Step.Progressed;
    }


    private long FirstOrdinalOf(int lane)
    {
        var t = _premeld.Length;
        var v = _schedule.Start + 1;
        while (v % t != lane)
        {
            v++;
        }

        return v;
    }

    /// <summary>True when intention <paramref name="v"/> is there as the premeld stage left it (or as submitted, without premeld).</summary>
    private bool HasResult(long v) => _premeld.Length == 0
        ? Volatile.Read(ref _inputOrdinals[0][(int)(v % _inputs[0].Length)]) == v
        : Volatile.Read(ref _resultOrdinals[(int)(v % _results.Length)]) == v;

    /// <summary>Takes intention <paramref name="v"/>, which <see cref="HasResult"/> found there.</summary>
    private void TakeResult(long v, out Intention? intention, out MeldOutcome abort)
    {
        if (_premeld.Length == 0)
        {
            var slot = (int)(v % _inputs[0].Length);
            Invariant.Assert(Volatile.Read(ref _inputOrdinals[0][slot]) == v, $"#{v} taken from an input slot that holds #{_inputOrdinals[0][slot]}");
            intention = _inputs[0][slot];
            abort = _inputDecided[0][slot];
            _inputs[0][slot] = null;
            Volatile.Write(ref _inputOrdinals[0][slot], -1);
            _producer.Signal();
            return;
        }

        var r = (int)(v % _results.Length);
        Invariant.Assert(Volatile.Read(ref _resultOrdinals[r]) == v, $"#{v} taken from a result slot that holds #{_resultOrdinals[r]}");
        intention = _results[r];
        abort = _premeldAborts[r];
        _results[r] = null;
        Volatile.Write(ref _resultOrdinals[r], -1);
    }
}
