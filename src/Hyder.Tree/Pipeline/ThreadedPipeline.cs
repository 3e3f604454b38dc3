using System.Runtime.ExceptionServices;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;

namespace Hyder.Tree.Pipeline;

/// <summary>The pipeline stages a delay can be injected into (tests).</summary>
public enum PipelineStage
{
    /// <summary>A premeld thread, before it premelds an intention.</summary>
    Premeld,

    /// <summary>The final-meld thread, before it melds an intention.</summary>
    FinalMeld,

    /// <summary>The group-meld thread, before it groups a pair.</summary>
    GroupMeld,
}

/// <summary>
/// The meld pipeline on its own threads (Hyder II §3-§5): t premeld threads, a group-meld thread
/// when group meld is on, and one final-meld thread. Every computation is the one
/// <see cref="ReferencePipeline"/> performs, in the same order per thread, so the states and
/// ephemeral ids are byte-identical whatever the timing.
/// </summary>
/// <remarks>
/// <para>Intentions are submitted in log order by one producer. Intention v goes to premeld
/// thread v mod t, which waits until final meld has produced the state after v − t·d − 1; the
/// group-meld thread takes premeld's results in log order and pairs 2k − 1 with 2k; final meld
/// takes one unit per ordinal (a group intention covers two). A stage whose input is not ready
/// spins a few rounds, then blocks until the stage that makes its input signals it
/// (<see cref="StageSignal"/>): where the stage threads outnumber the cores, a spinning waiter holds
/// the core its producer needs (docs/benchmarks/server.md, "The hot path", measures the waits on the
/// 2-core EPYC VM described there), and an idle server must use no CPU. Busy-spinning
/// (Hyder II §5.2) is for machines with a core per stage to spare (<see cref="SpinPolicy"/>).</para>
/// <para>Hand-offs are single-producer, single-consumer slots: a value, then a volatile write of
/// its ordinal. The state after ordinal m is pinned by final meld and released by the premeld of
/// m + t·d + 1; the states ring holds t·d + 3 of them, which is enough because final meld cannot
/// pass that intention before its premeld has run. With group meld a state exists only after a
/// pair, so final meld publishes the state after pair end e for both e and e + 1.</para>
/// </remarks>
public sealed class ThreadedPipeline : IDisposable
{
    private readonly Database _database;
    private readonly MeldOperator[] _premeld;
    private readonly PremeldSchedule _schedule;
    private readonly Action<PipelineStage, long>? _delay;
    private readonly Action<long, MeldOutcome, DatabaseState>? _melded;

    private readonly Intention?[][] _inputs;
    private readonly MeldOutcome[][] _inputDecided;
    private readonly long[][] _inputBarriers;
    private readonly long[][] _inputOrdinals;
    private readonly Intention?[] _results;
    private readonly MeldOutcome[] _premeldAborts;
    private readonly long[] _resultOrdinals;
    private readonly DatabaseState?[] _states;
    private readonly long[] _stateOrdinals;
    private readonly Thread[] _threads;
    private readonly bool _grouping;
    private readonly MeldOperator? _group;
    private readonly Unit[] _units;
    private readonly long[] _unitOrdinals;

    private readonly bool _spinOnly;
    private readonly bool _cooperative;
    private readonly bool _requireValidated;

    // One signal per stage (0..t−1 premeld lanes, t final meld, t + 1 group meld) and one for
    // the submitter and WaitFor callers: who makes a stage's input ready signals it.
    private readonly StageSignal[] _signals;
    private readonly StageSignal _producer = new();

    // Each stage's position: only its own thread (or, cooperatively, the pumping caller) touches it.
    private readonly long[] _premeldNext;
    private long _groupNext;
    private Intention? _held;
    private MeldOutcome _heldAbort;
    private long _heldOrdinal;
    private long _finalNext;
    private MeldOutcome _finalLast;
    private bool _pumping;

    private long _lastSubmitted;
    private long _lastMelded;

    // Final meld's time (Stopwatch ticks, written by its thread only): busy with an ordinal, and
    // inside the database's meld or skip proper.
    private long _finalBusyTicks;
    private long _finalMeldTicks;
    private long _barrier;
    private PipelineBarrier? _capture;
    private readonly long[] _laneDone;
    private long _end = long.MaxValue;
    private volatile bool _stopping;
    private ExceptionDispatchInfo? _failure;

    /// <summary>Starts the stage threads.</summary>
    /// <param name="database">The database whose final meld (stage thread id 0) this pipeline drives.</param>
    /// <param name="premeldThreads">t (0 turns premeld off).</param>
    /// <param name="distance">d, the premeld distance.</param>
    /// <param name="window">Intentions submitted but not yet melded, at most.</param>
    /// <param name="delay">Called before each stage step (tests inject delays here).</param>
    /// <param name="melded">Called on the final-meld thread after each intention, with the new current state.</param>
    /// <param name="startOrder">The order the threads start in (index t is final meld); null for 0..t.</param>
    public ThreadedPipeline(
        Database database,
        int premeldThreads,
        int distance,
        int window = 1024,
        Action<PipelineStage, long>? delay = null,
        Action<long, MeldOutcome, DatabaseState>? melded = null,
        IReadOnlyList<int>? startOrder = null)
        : this(database, new PipelineOptions(premeldThreads, distance), window, delay, melded, startOrder)
    {
    }

    /// <summary>Starts the stage threads.</summary>
    /// <param name="database">The database whose final meld (stage thread id 0) this pipeline drives.</param>
    /// <param name="options">
    /// t, d and group meld (which runs after premeld here; grouping first is the reference pipeline's only).
    /// </param>
    /// <param name="window">Intentions submitted but not yet melded, at most.</param>
    /// <param name="delay">Called before each stage step (tests inject delays here).</param>
    /// <param name="melded">Called on the final-meld thread after each intention, with the new current state.</param>
    /// <param name="startOrder">The order the threads start in (0..t−1 premeld, t final meld, t+1 group meld); null for ascending.</param>
    public ThreadedPipeline(
        Database database,
        PipelineOptions options,
        int window = 1024,
        Action<PipelineStage, long>? delay = null,
        Action<long, MeldOutcome, DatabaseState>? melded = null,
        IReadOnlyList<int>? startOrder = null)
        : this(database, options, new PipelineRuntime { Window = window, Delay = delay, Melded = melded, StartOrder = startOrder })
    {
    }

    /// <summary>Starts the stage threads.</summary>
    /// <param name="database">
    /// The database whose final meld (stage thread id 0) this pipeline drives; the pipeline starts
    /// after its <see cref="Database.LastAppended"/>, which is also the first barrier (a restarted
    /// server's premelds never reach behind it, and neither do its peers').
    /// </param>
    /// <param name="options">t, d and group meld (premeld runs before group meld here).</param>
    /// <param name="runtime">Window, hooks, the stages' first ephemeral sequences, threading policy.</param>
    public ThreadedPipeline(Database database, PipelineOptions options, PipelineRuntime runtime)
    {
        ArgumentNullException.ThrowIfNull(runtime);
        var window = runtime.Window;
        var delay = runtime.Delay;
        var melded = runtime.Melded;
        var startOrder = runtime.StartOrder;
        options.Validate();
        var premeldThreads = options.PremeldThreads;
        var distance = options.Distance;
        if (options.GroupFirst)
        {
            ThrowHelper.ThrowArgument(nameof(options), "the threaded pipeline premelds before it groups");
        }

        ArgumentOutOfRangeException.ThrowIfLessThan(window, 2);
        if (database.FinalMeld.ThreadId != 0)
        {
            ThrowHelper.ThrowArgument(nameof(database), "the final meld must have stage thread id 0; premeld threads use 1..t");
        }

        _database = database;
        _requireValidated = runtime.RequireValidated;
        _signals = new StageSignal[premeldThreads + 2];
        for (var i = 0; i < _signals.Length; i++)
        {
            _signals[i] = new StageSignal();
        }

        _delay = delay;
        _melded = melded;
        _grouping = options.GroupMeld;
        _schedule = new PremeldSchedule(premeldThreads, distance, database.LastAppended);
        _lastSubmitted = _lastMelded = _barrier = _schedule.Start;
        _groupNext = _finalNext = _schedule.Start + 1;
        _premeld = new MeldOperator[premeldThreads];
        _premeldNext = new long[premeldThreads];
        _laneDone = new long[premeldThreads];
        var lanes = Math.Max(premeldThreads, 1);
        _inputs = new Intention?[lanes][];
        _inputDecided = new MeldOutcome[lanes][];
        _inputBarriers = new long[lanes][];
        _inputOrdinals = new long[lanes][];
        var sequences = runtime.StartSequences;
        if (sequences is not null && sequences.Premeld.Length != premeldThreads)
        {
            ThrowHelper.ThrowArgument(nameof(runtime), $"the start sequences name {sequences.Premeld.Length} premeld threads, the pipeline has {premeldThreads}");
        }

        for (var i = 0; i < lanes; i++)
        {
            _inputs[i] = new Intention?[window];
            _inputDecided[i] = new MeldOutcome[window];
            _inputBarriers[i] = new long[window];
            _inputOrdinals[i] = new long[window];
            if (i < premeldThreads)
            {
                _premeld[i] = new MeldOperator((byte)(i + 1), new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange), sequences?.Premeld[i] ?? 0);
                _premeldNext[i] = FirstOrdinalOf(i);
            }
        }

        _results = new Intention?[window];
        _premeldAborts = new MeldOutcome[window];
        _resultOrdinals = new long[window];
        Array.Fill(_resultOrdinals, -1);
        foreach (var lane in _inputOrdinals)
        {
            Array.Fill(lane, -1);
        }

        var ring = (premeldThreads * distance) + 3;
        _states = new DatabaseState?[ring];
        _stateOrdinals = new long[ring];
        Array.Fill(_stateOrdinals, -1);
        if (premeldThreads > 0)
        {
            Publish(_schedule.Start, database.PinCurrent());
            if (_grouping && _schedule.Start % 2 == 0)
            {
                // "The state after" an odd ordinal is the state after its pair's predecessor.
                Publish(_schedule.Start + 1, database.PinCurrent());
            }
        }

        _units = new Unit[window];
        _unitOrdinals = new long[window];
        Array.Fill(_unitOrdinals, -1);
        if (_grouping)
        {
            _group = new MeldOperator(options.GroupThreadId, new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange), sequences?.Group ?? 0);
        }

        var stageThreads = premeldThreads + (_grouping ? 2 : 1);
        _cooperative = runtime.Threading.Cooperative;
        if (_cooperative)
        {
            // No thread: Submit, SubmitDecided, SubmitBarrier, WaitFor and Dispose run the stages on the caller's thread.
            Threading = new ResolvedThreading(false, null, Environment.ProcessorCount, 0) { Cooperative = true };
            _threads = [];
            return;
        }

        var policy = runtime.Threading.Resolve(stageThreads);
        _spinOnly = policy.SpinOnly;
        Threading = policy;
        _threads = new Thread[stageThreads];
        for (var i = 0; i < premeldThreads; i++)
        {
            var lane = i;
            _threads[i] = new Thread(() => Run(() => StageLoop(lane), policy, 1 + lane)) { IsBackground = true, Name = $"premeld-{i + 1}" };
        }

        _threads[premeldThreads] = new Thread(() => Run(() => StageLoop(premeldThreads), policy, 0)) { IsBackground = true, Name = "final-meld" };
        if (_grouping)
        {
            _threads[premeldThreads + 1] = new Thread(() => Run(() => StageLoop(premeldThreads + 1), policy, premeldThreads + 1)) { IsBackground = true, Name = "group-meld" };
        }

        foreach (var i in startOrder ?? Enumerable.Range(0, _threads.Length).ToArray())
        {
            _threads[i].Start();
        }
    }

    /// <summary>How the stage threads wait and whether they are pinned (resolved for this machine).</summary>
    public ResolvedThreading Threading { get; }

    /// <summary>The premeld operators (their counters are premeld's statistics).</summary>
    public IReadOnlyList<MeldOperator> PremeldOperators => _premeld;

    /// <summary>The group-meld operator, when group meld is on.</summary>
    public MeldOperator? GroupOperator => _group;

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

    /// <summary>Why the pipeline stopped, when a stage failed; null while it runs.</summary>
    public Exception? Failure => _failure?.SourceException;

    /// <summary>
    /// Stopwatch ticks final meld spent on ordinals (from taking one to handing it on, the
    /// callbacks included) and, of those, inside <see cref="Database.Meld"/> (or a skip): the
    /// thread's utilisation and how much of it is meld proper (DESIGN §6).
    /// </summary>
    public (long BusyTicks, long MeldTicks) FinalMeldTicks => (Volatile.Read(ref _finalBusyTicks), Volatile.Read(ref _finalMeldTicks));

    /// <summary>The ordinal of the last intention final meld has finished.</summary>
    public long LastMelded => Volatile.Read(ref _lastMelded);

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

    private void Put(long v, Intention? intention, in MeldOutcome decided)
    {
        if (v != _lastSubmitted + 1)
        {
            ThrowHelper.ThrowInvalidOperation($"intention #{v} submitted out of order: the next is #{_lastSubmitted + 1}");
        }

        var lane = _premeld.Length == 0 ? 0 : _schedule.ThreadOf(v);
        var slot = (int)(v / Math.Max(_premeld.Length, 1) % _inputs[lane].Length);
        var wait = default(StageWait);
        while (true)
        {
            var seen = _producer.Version;
            if (v - Volatile.Read(ref _lastMelded) <= _results.Length && Volatile.Read(ref _inputOrdinals[lane][slot]) < 0)
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

    /// <summary>Finishes everything submitted, stops the threads and releases the states they hold.</summary>
    public void Dispose()
    {
        Volatile.Write(ref _end, _lastSubmitted);
        SignalAll();
        if (_cooperative)
        {
            Pump();
        }

        foreach (var t in _threads)
        {
            t.Join();
        }

        for (var i = 0; i < _states.Length; i++)
        {
            if (_states[i] is { } s)
            {
                _database.Release(s);
                _states[i] = null;
            }
        }

        _failure?.Throw();
    }

    private void Run(Action loop, ResolvedThreading policy, int stage)
    {
        try
        {
            if (policy.PinnedCores is { } cores)
            {
                CoreAffinity.PinCurrentThread(cores[stage % cores.Length]);
            }

            loop();
        }
        catch (Exception e)
        {
            Fail(e);
        }
    }

    private void Fail(Exception e)
    {
        Interlocked.CompareExchange(ref _failure, ExceptionDispatchInfo.Capture(e), null);
        _stopping = true;
        SignalAll();
    }

    private void ThrowIfFailed()
    {
        if (_stopping)
        {
            _failure?.Throw();
            ThrowHelper.ThrowInvalidOperation("the pipeline has stopped");
        }
    }

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
            if (intention is not null && m >= barrier && _schedule.Applies(v, intention.LatestSnapshotSequence, input) && Valid(intention))
            {
                abort = op.Premeld(intention, input, out result);
            }

            _states[stateSlot] = null;
            _database.Release(input);
        }

        var r = (int)(v % _results.Length);
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

    /// <summary>
    /// Validates before premeld uses the intention; a rejected one goes to final meld untouched,
    /// which rejects it in log order like any server would.
    /// </summary>
    private static bool Valid(Intention intention)
    {
        try
        {
            IntentionValidator.Validate(intention);
            return true;
        }
        catch (IntentionRejectedException)
        {
            return false;
        }
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
            intention = _inputs[0][slot];
            abort = _inputDecided[0][slot];
            _inputs[0][slot] = null;
            Volatile.Write(ref _inputOrdinals[0][slot], -1);
            _producer.Signal();
            return;
        }

        var r = (int)(v % _results.Length);
        intention = _results[r];
        abort = _premeldAborts[r];
        _results[r] = null;
        Volatile.Write(ref _resultOrdinals[r], -1);
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
        if (held is not null && intention is not null && (held.IsValidated || Valid(held)) && (intention.IsValidated || Valid(intention))
            && MeldOperator.CanGroup(held, intention))
        {
            var outcome = _group!.Group(held, intention, out var unit, out var decision);
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

    private long _groupCaptured;

    /// <summary>Hands final meld ordinal <paramref name="v"/>'s unit; its slot is free (checked before the step took its input).</summary>
    private void PutUnit(long v, Intention? intention, in MeldOutcome abort, bool covered)
    {
        var slot = (int)(v % _units.Length);
        if (_unitOrdinals[slot] != -1)
        {
            ThrowHelper.ThrowInvariant($"the unit slot of #{v} is still taken by #{_unitOrdinals[slot]}");
        }

        _units[slot] = new Unit { Intention = intention, Abort = abort, Covered = covered };
        Volatile.Write(ref _unitOrdinals[slot], v);
        _signals[FinalStage].Signal();
    }

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
        if (Volatile.Read(ref _capture) is { } capture && capture.Ordinal == v)
        {
            capture.SetFinal(_database.FinalMeld.NextEphemeralSequence, _database.PinCurrent());
        }

        Volatile.Write(ref _lastMelded, v);
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
