using Hyder.Tree.Meld;
using Hyder.Tree.Memory;

namespace Hyder.Tree.Pipeline;

/// <summary>
/// The meld pipeline of Hyder II §3-§4 run on one thread in a fixed order: the deterministic
/// reference that the threaded pipeline must match byte for byte.
/// </summary>
/// <remarks>
/// <para>Premeld: with <c>t</c> premeld threads and premeld distance <c>d</c>, intention <c>v</c>
/// is premelded by thread <c>v mod t</c> against the state after intention <c>m = v − t·d − 1</c>
/// (Hyder II Algorithm 1), unless its snapshot is not older than that. Premeld thread <c>i</c> has
/// stage thread id <c>i + 1</c>; final meld has id 0.</para>
/// <para>Group meld pairs intentions <c>2k − 1</c> and <c>2k</c> (stage thread id <c>t + 1</c>).
/// States then exist only after whole pairs, so "the state after m" for an odd m means the state
/// after m − 1. A pair is melded on its own parts when it cannot be grouped: a part aborted by
/// premeld or rejected, or the second ran on a state that includes the first. The first
/// intention after the pipeline's start is alone when its ordinal is even.</para>
/// <para>With <see cref="PipelineOptions.GroupFirst"/>, pair k is grouped first and its group
/// premelded by thread <c>k mod t</c> against the state after pair <c>k − t·d − 1</c>.</para>
/// </remarks>
public sealed class ReferencePipeline
{
    private readonly Database _database;
    private readonly MeldOperator[] _premeld;
    private readonly MeldOperator? _group;
    private readonly PipelineOptions _options;
    private readonly List<(long Ordinal, DatabaseState State)> _retained = [];
    private readonly PremeldSchedule _schedule;
    private readonly List<PipelineDecision> _decided = [];

    // Group meld: the first part of the current pair (raw when grouping first, else after premeld).
    private Intention? _pending;
    private long _pendingOrdinal;
    private MeldOutcome _pendingAbort;
    private bool _pendingRejected;

    /// <summary>Creates a premeld-only pipeline over <paramref name="database"/> (whose final meld has thread id 0).</summary>
    /// <param name="database">The database whose final meld this pipeline feeds.</param>
    /// <param name="premeldThreads">t: premeld threads (0 turns premeld off).</param>
    /// <param name="distance">d: the premeld distance.</param>
    public ReferencePipeline(Database database, int premeldThreads, int distance)
        : this(database, new PipelineOptions(premeldThreads, distance))
    {
    }

    /// <summary>Creates the pipeline over <paramref name="database"/> (whose final meld has thread id 0).</summary>
    public ReferencePipeline(Database database, PipelineOptions options)
    {
        options.Validate();
        if (database.FinalMeld.ThreadId != 0)
        {
            ThrowHelper.ThrowArgument(nameof(database), "the final meld must have stage thread id 0; premeld threads use 1..t");
        }

        _database = database;
        _options = options;
        _premeld = new MeldOperator[options.PremeldThreads];
        for (var i = 0; i < _premeld.Length; i++)
        {
            _premeld[i] = new MeldOperator((byte)(i + 1), new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange));
        }

        if (options.GroupMeld)
        {
            _group = new MeldOperator(options.GroupThreadId, new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange));
        }

        // Premeld inputs start at the state this pipeline starts from: an intention whose turn
        // names an older state is not premelded (the same on every server that starts here).
        _schedule = new PremeldSchedule(options.PremeldThreads, options.Distance, database.LastAppended, options.GroupFirst);
        if (_premeld.Length > 0)
        {
            _retained.Add((_schedule.Start, database.PinCurrent()));
        }
    }

    /// <summary>The settings.</summary>
    public PipelineOptions Options => _options;

    /// <summary>The premeld operators (their counters are premeld's statistics).</summary>
    public IReadOnlyList<MeldOperator> PremeldOperators => _premeld;

    /// <summary>The group-meld operator, when group meld is on (its counters are group meld's statistics).</summary>
    public MeldOperator? GroupOperator => _group;

    /// <summary>Intentions (or groups) premeld ran on, aborts included.</summary>
    public long Premelded { get; private set; }

    /// <summary>Pairs group meld ran on.</summary>
    public long Groups { get; private set; }

    /// <summary><see cref="System.Diagnostics.Stopwatch"/> ticks spent in final meld (the sequential stage).</summary>
    public long FinalMeldTicks { get; private set; }

    /// <summary>
    /// Runs the next appended intention through the pipeline. Returns the decisions this call
    /// completed, in log order: one, or with group meld none for the first of a pair and two for
    /// the second. The list is reused by the next call.
    /// </summary>
    public IReadOnlyList<PipelineDecision> Process(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        _decided.Clear();
        var v = intention.Ordinal;
        var rejected = !IntentionValidator.IsValid(intention);
        if (!_options.GroupMeld)
        {
            if (rejected)
            {
                FinalMeld(intention);
            }
            else
            {
                PremeldAndMeld(intention, v);
            }

            Retain(v);
            return _decided;
        }

        var first = v % 2 == 1;
        if (first)
        {
            // Hold it until its partner arrives (with premeld first, premeld it now).
            _pendingOrdinal = v;
            _pendingRejected = rejected;
            _pendingAbort = default;
            _pending = intention;
            if (!rejected && !_options.GroupFirst)
            {
                _pending = Premeld(intention, v, out _pendingAbort);
            }

            return _decided;
        }

        if (_pendingOrdinal != v - 1)
        {
            // The pipeline started between the two: this one is alone.
            if (rejected)
            {
                FinalMeld(intention);
            }
            else
            {
                PremeldAndMeld(intention, v);
            }

            Retain(v);
            return _decided;
        }

        var second = intention;
        var secondAbort = default(MeldOutcome);
        if (!rejected && !_options.GroupFirst)
        {
            second = Premeld(intention, v, out secondAbort);
        }

        var pending = _pending;
        _pending = null;
        _pendingOrdinal = 0;
        if (pending is not null && second is not null && !_pendingRejected && !rejected && MeldOperator.CanGroup(pending, second))
        {
            Group(pending, second);
        }
        else
        {
            Alone(pending, v - 1, _pendingAbort);
            Alone(second, v, secondAbort);
        }

        Retain(v);
        return _decided;
    }

    /// <summary>
    /// Melds a first part still waiting for its partner on its own. For the end of a test log: a
    /// server never does this (every server must pair alike), it waits for the next intention.
    /// </summary>
    public IReadOnlyList<PipelineDecision> Flush()
    {
        _decided.Clear();
        if (_pendingOrdinal != 0)
        {
            var v = _pendingOrdinal;
            var pending = _pending;
            _pending = null;
            _pendingOrdinal = 0;
            if (pending is not null && _options.GroupFirst && !_pendingRejected)
            {
                pending = Premeld(pending, v, out _pendingAbort);
            }

            Alone(pending, v, _pendingAbort);
            Retain(v);
        }

        return _decided;
    }

    private void Group(Intention first, Intention second)
    {
        Groups++;
        var outcome = _group!.Group(first, second, out var unit, out var decision);
        var v1 = first.Ordinal;
        var v2 = second.Ordinal;
        if (decision == GroupDecision.BothAborted)
        {
            Aborted(v1, outcome, PipelineStage.GroupMeld);
            Aborted(v2, outcome, PipelineStage.GroupMeld);
            return;
        }

        // What goes on (the group, or the first alone) is premelded now when grouping comes first.
        var premeldAbort = default(MeldOutcome);
        if (_options.GroupFirst)
        {
            unit = Premeld(unit!, v2, out premeldAbort);
        }

        if (unit is null)
        {
            Aborted(v1, premeldAbort, PipelineStage.Premeld);
            if (decision == GroupDecision.SecondAborted)
            {
                Aborted(v2, outcome, PipelineStage.GroupMeld);
            }
            else
            {
                Aborted(v2, premeldAbort, PipelineStage.Premeld);
            }

            return;
        }

        var final = TimedMeld(unit);
        _decided.Add(new PipelineDecision(v1, final, PipelineStage.FinalMeld));
        if (decision == GroupDecision.SecondAborted)
        {
            Aborted(v2, outcome, PipelineStage.GroupMeld);
        }
        else
        {
            _decided.Add(new PipelineDecision(v2, final, PipelineStage.FinalMeld));
        }
    }

    /// <summary>Records an abort decided before final meld, so final meld can go past it.</summary>
    private void Aborted(long v, in MeldOutcome outcome, PipelineStage stage)
    {
        _database.Skip(v);
        _decided.Add(new PipelineDecision(v, outcome, stage));
    }

    /// <summary>One part melded on its own: aborted earlier (null), or through final meld.</summary>
    private void Alone(Intention? part, long v, in MeldOutcome abort)
    {
        if (part is null)
        {
            Aborted(v, abort, PipelineStage.Premeld);
        }
        else
        {
            _decided.Add(new PipelineDecision(v, TimedMeld(part), PipelineStage.FinalMeld));
        }
    }

    private void PremeldAndMeld(Intention intention, long v)
    {
        var refreshed = Premeld(intention, v, out var abort);
        Alone(refreshed, v, abort);
    }

    /// <summary>
    /// Premelds when the schedule says so: the refreshed intention, the intention itself when
    /// there is nothing to do, or null when premeld aborted it (<paramref name="abort"/> says why).
    /// </summary>
    private Intention? Premeld(Intention intention, long v, out MeldOutcome abort)
    {
        abort = default;
        if (_premeld.Length == 0)
        {
            return intention;
        }

        var m = _schedule.InputOf(v);
        if (!_schedule.Retains(m))
        {
            return intention;
        }

        var input = StateAsOf(m);
        if (!_schedule.Applies(v, intention.LatestSnapshotSequence, input))
        {
            return intention;
        }

        Premelded++;
        abort = _premeld[_schedule.ThreadOf(v)].Premeld(intention, input, out var refreshed);
        return refreshed;
    }

    private void FinalMeld(Intention intention) =>
        _decided.Add(new PipelineDecision(intention.Ordinal, TimedMeld(intention), PipelineStage.FinalMeld));

    private MeldOutcome TimedMeld(Intention intention)
    {
        var started = System.Diagnostics.Stopwatch.GetTimestamp();
        var outcome = _database.Meld(intention);
        FinalMeldTicks += System.Diagnostics.Stopwatch.GetTimestamp() - started;
        return outcome;
    }

    private DatabaseState StateAsOf(long ordinal)
    {
        DatabaseState? found = null;
        foreach (var (o, s) in _retained)
        {
            if (o <= ordinal)
            {
                found = s;
            }
        }

        if (found is null)
        {
            ThrowHelper.ThrowInvariant($"premeld needs the state after #{ordinal}, which was not retained");
        }

        return found;
    }

    private void Retain(long ordinal)
    {
        if (_premeld.Length == 0)
        {
            return;
        }

        _retained.Add((ordinal, _database.PinCurrent()));

        // Later premelds ask for states as of InputOf(ordinal + 1) or later: an older state is no
        // longer the newest one at or before any of those.
        var oldestAsked = _schedule.InputOf(ordinal + 1);
        var drop = 0;
        while (drop < _retained.Count - 1 && _retained[drop + 1].Ordinal <= oldestAsked)
        {
            _database.Release(_retained[drop++].State);
        }

        _retained.RemoveRange(0, drop);
    }

    /// <summary>Releases every state the pipeline retained.</summary>
    public void ReleaseAll()
    {
        foreach (var (_, state) in _retained)
        {
            _database.Release(state);
        }

        _retained.Clear();
    }
}
