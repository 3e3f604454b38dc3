// Final meld (stage thread id 0): melds each ordinal's unit into the database in log order and
// publishes the states premeld reads. Relation to ReferencePipeline: this is its FinalMeld and
// TimedMeld plus Retain (here Publish, into a ring of t·d + 3 pinned states that premeld
// releases, where the reference keeps a list and releases by ordinal). Final meld of a group
// made before premeld (PipelineOptions.GroupFirst) exists only in the reference pipeline.

using Hyder.Tree.Meld;

namespace Hyder.Tree.Pipeline;

public sealed partial class ThreadedPipeline
{
    private long _finalNext;
    private MeldOutcome _finalLast;
    private long _lastMelded;

    // Final meld's time (Stopwatch ticks, written by its thread only): busy with an ordinal, and
    // inside the database's meld or skip proper.
    private long _finalBusyTicks;
    private long _finalMeldTicks;

    // The states premeld reads: the state after ordinal m in slot m mod (t·d + 3), pinned.
    private readonly DatabaseState?[] _states;
    private readonly long[] _stateOrdinals;

    /// <summary>
    /// Stopwatch ticks final meld spent on ordinals (from taking one to handing it on, the
    /// callbacks included) and, of those, inside <see cref="Database.Meld"/> (or a skip): the
    /// thread's utilisation and how much of it is meld proper (DESIGN §6).
    /// </summary>
    public (long BusyTicks, long MeldTicks) FinalMeldTicks => (Volatile.Read(ref _finalBusyTicks), Volatile.Read(ref _finalMeldTicks));

    /// <summary>The ordinal of the last intention final meld has finished.</summary>
    public long LastMelded => Volatile.Read(ref _lastMelded);

    /// <summary>Final meld: the next ordinal's unit (or premeld's result), melded into the database.</summary>
    private Step FinalStep()
    {
        if (_stopping)
        {
            return Step.Ended;
        }

        var t = _premeld.Length;
        var v = _finalNext;
        Intention? intention;
        MeldOutcome outcome;
        var covered = false;
        if (_grouping)
        {
            var slot = (int)(v % _units.Length);
            if (Volatile.Read(ref _unitOrdinals[slot]) != v)
            {
                return Idle(v);
            }

            var unit = _units[slot];
            _units[slot] = default;
            Volatile.Write(ref _unitOrdinals[slot], -1);
            (intention, outcome, covered) = (unit.Intention, unit.Abort, unit.Covered);
        }
        else if (HasResult(v))
        {
            TakeResult(v, out intention, out outcome);
        }
        else
        {
            return Idle(v);
        }

        Invariant.Assert(v == Volatile.Read(ref _lastMelded) + 1, $"final meld takes #{v} after #{_lastMelded}");
        _finalNext = v + 1;
        _delay?.Invoke(PipelineStage.FinalMeld, v);
        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        if (covered)
        {
            // The group melded at v − 1 decided this one too.
            outcome = _finalLast;
        }
        else if (intention is null && outcome.Committed)
        {
            _database.SkipCommitted(v);
        }
        else if (intention is null)
        {
            _database.Skip(v);
        }
        else
        {
            outcome = _database.Meld(intention);
        }

        var melded = System.Diagnostics.Stopwatch.GetTimestamp();
        _finalLast = outcome;
        if (t > 0)
        {
            if (!_grouping)
            {
                Publish(v, _database.PinCurrent());
            }
            else if (v % 2 == 0)
            {
                // A pair is done: the state after it is "the state after" both v and v + 1.
                Publish(v, _database.PinCurrent());
                Publish(v + 1, _database.PinCurrent());
            }
        }

        _melded?.Invoke(v, outcome, _database.Current);

        // Before the barrier may complete: whoever awaits it sees the barrier's ordinal melded
        // (ABarrierAtTheEndOfTheLogCompletesWithoutALaterOrdinal once saw #1 after the barrier at #2).
        Volatile.Write(ref _lastMelded, v);
        if (Volatile.Read(ref _capture) is { } capture && capture.Ordinal == v)
        {
            capture.SetFinal(_database.FinalMeld.NextEphemeralSequence, _database.PinCurrent());
        }

        _producer.Signal();
        Volatile.Write(ref _finalMeldTicks, _finalMeldTicks + (melded - started));
        Volatile.Write(ref _finalBusyTicks, _finalBusyTicks + (System.Diagnostics.Stopwatch.GetTimestamp() - started));
        if (_grouping)
        {
            // A unit slot is free again.
            _signals[GroupStage].Signal();
        }

        return Step.Progressed;
    }

    private void Publish(long ordinal, DatabaseState state)
    {
        var slot = (int)(ordinal % _states.Length);
        Invariant.Assert(_stateOrdinals[slot] < ordinal && state.Pins > 0 && state.Sequence <= ordinal, $"the state after #{ordinal} ({state}, {state.Pins} pins) published over the state after #{_stateOrdinals[slot]}");
        if (_states[slot] is not null)
        {
            ThrowHelper.ThrowInvariant($"the state after #{ordinal - _states.Length} was never taken by its premeld");
        }

        _states[slot] = state;
        Volatile.Write(ref _stateOrdinals[slot], ordinal);
        for (var lane = 0; lane < _premeld.Length; lane++)
        {
            _signals[lane].Signal();
        }
    }
}
