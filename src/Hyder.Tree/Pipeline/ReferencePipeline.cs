using Hyder.Tree.Meld;
using Hyder.Tree.Memory;

namespace Hyder.Tree.Pipeline;

/// <summary>
/// The meld pipeline of Hyder II §3-§4 run on one thread in a fixed order: the deterministic
/// reference that the threaded pipeline must match byte for byte.
/// </summary>
/// <remarks>
/// With <c>t</c> premeld threads and premeld distance <c>d</c>, intention <c>v</c> is premelded by
/// thread <c>v mod t</c> against the state after intention <c>m = v − t·d − 1</c> (Hyder II
/// Algorithm 1), unless its snapshot is not older than that. Premeld thread <c>i</c> has stage
/// thread id <c>i + 1</c>; final meld has id 0. The state for each ordinal is pinned until the
/// intention that premelds against it has run.
/// </remarks>
public sealed class ReferencePipeline
{
    private readonly Database _database;
    private readonly MeldOperator[] _premeld;
    private readonly int _distance;
    private readonly Queue<(long Ordinal, DatabaseState State)> _retained = new();
    private readonly PremeldSchedule _schedule;

    /// <summary>Creates the pipeline over <paramref name="database"/> (whose final meld has thread id 0).</summary>
    /// <param name="database">The database whose final meld this pipeline feeds.</param>
    /// <param name="premeldThreads">t: premeld threads (0 turns premeld off).</param>
    /// <param name="distance">d: the premeld distance.</param>
    public ReferencePipeline(Database database, int premeldThreads, int distance)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(premeldThreads);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(premeldThreads, 254);
        ArgumentOutOfRangeException.ThrowIfNegative(distance);
        if (database.FinalMeld.ThreadId != 0)
        {
            ThrowHelper.ThrowArgument(nameof(database), "the final meld must have stage thread id 0; premeld threads use 1..t");
        }

        _database = database;
        _distance = distance;
        _premeld = new MeldOperator[premeldThreads];
        for (var i = 0; i < premeldThreads; i++)
        {
            _premeld[i] = new MeldOperator((byte)(i + 1), new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange));
        }

        // Premeld inputs start at the state this pipeline starts from: an intention whose turn
        // names an older state is not premelded (the same on every server that starts here).
        _schedule = new PremeldSchedule(premeldThreads, distance, database.LastAppended);
        if (premeldThreads > 0)
        {
            _retained.Enqueue((_schedule.Start, database.PinCurrent()));
        }
    }

    /// <summary>The premeld operators (their counters are premeld's statistics).</summary>
    public IReadOnlyList<MeldOperator> PremeldOperators => _premeld;

    /// <summary>Final-meld outcomes of intentions that premeld changed, and premeld aborts.</summary>
    public long Premelded { get; private set; }

    /// <summary><see cref="System.Diagnostics.Stopwatch"/> ticks spent in final meld (the sequential stage).</summary>
    public long FinalMeldTicks { get; private set; }

    /// <summary>
    /// Runs the next appended intention through premeld (when its turn says so) and final meld.
    /// </summary>
    public MeldOutcome Process(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        var v = intention.Ordinal;
        if (Rejected(intention) is { } rejected)
        {
            Retain(v);
            return rejected;
        }

        MeldOutcome outcome;
        DatabaseState? input = null;
        var m = _schedule.InputOf(v);
        if (_schedule.Retains(m))
        {
            input = StateAsOf(m);
            if (!_schedule.Applies(v, intention.SnapshotSequence, input))
            {
                input = null;
            }
        }

        if (input is not null)
        {
            var pre = _premeld[_schedule.ThreadOf(v)].Premeld(intention, input, out var refreshed);
            Premelded++;
            if (refreshed is null)
            {
                _database.Skip(v);
                outcome = pre;
            }
            else
            {
                outcome = TimedMeld(refreshed);
            }
        }
        else
        {
            outcome = TimedMeld(intention);
        }

        Retain(v);
        return outcome;
    }

    /// <summary>
    /// Validates on entry, before any stage uses the intention (what the deserialization stage does
    /// in a server); a rejected intention aborts in log order like any other.
    /// </summary>
    private MeldOutcome? Rejected(Intention intention)
    {
        try
        {
            IntentionValidator.Validate(intention);
            return null;
        }
        catch (IntentionRejectedException)
        {
            // Database.Meld reports the rejection (and releases the pins) exactly as it would
            // for an intention that was never validated.
            return _database.Meld(intention);
        }
    }

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

        _retained.Enqueue((ordinal, _database.PinCurrent()));

        // The next intention premelds against ordinal (next − t·d − 1); older states are not needed.
        var oldestNeeded = ordinal + 1 - ((long)_premeld.Length * _distance) - 1;
        while (_retained.Count > 1 && _retained.Peek().Ordinal < oldestNeeded)
        {
            _database.Release(_retained.Dequeue().State);
        }
    }

    /// <summary>Releases every state the pipeline retained.</summary>
    public void ReleaseAll()
    {
        while (_retained.Count > 0)
        {
            _database.Release(_retained.Dequeue().State);
        }
    }
}
