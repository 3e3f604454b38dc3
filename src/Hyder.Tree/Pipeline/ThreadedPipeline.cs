// The threaded pipeline's shape: its settings, its threads and how it stops. Relation to
// ReferencePipeline: the same stages with the same operators and stage thread ids (final meld 0,
// premeld 1..t, group meld t + 1), each on its own thread, fed through single-producer,
// single-consumer slots instead of called in turn. One difference in what it accepts: group meld
// before premeld (PipelineOptions.GroupFirst) exists only in the reference pipeline.

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
/// <para>One partial file per stage: ThreadedPipeline.Submit.cs (the producer),
/// ThreadedPipeline.Premeld.cs, ThreadedPipeline.GroupMeld.cs, ThreadedPipeline.FinalMeld.cs, and
/// ThreadedPipeline.Stages.cs (how the stages run: threads or cooperatively); each says at its top
/// which part of <see cref="ReferencePipeline"/> it runs.</para>
/// </remarks>
public sealed partial class ThreadedPipeline : IDisposable
{
    private readonly Database _database;
    private readonly PremeldSchedule _schedule;
    private readonly Action<PipelineStage, long>? _delay;
    private readonly Action<long, MeldOutcome, DatabaseState>? _melded;
    private readonly Thread[] _threads;
    private readonly bool _cooperative;
    private readonly bool _requireValidated;

    private long _end = long.MaxValue;
    private volatile bool _stopping;
    private ExceptionDispatchInfo? _failure;

    /// <summary>What the final-meld thread's priority request came to (<see cref="ResolvedThreading.FinalMeldPriority"/>).</summary>
    private string? _finalMeldPriority;

    /// <summary>The final-meld thread's Linux thread id once it has started (0 before, or elsewhere).</summary>
    private int _finalMeldThreadId;

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
        CheckSettings(database, options, runtime);
        var premeldThreads = options.PremeldThreads;
        var window = runtime.Window;
        var sequences = runtime.StartSequences;
        _database = database;
        _requireValidated = runtime.RequireValidated;
        _signals = new StageSignal[premeldThreads + 2];
        for (var i = 0; i < _signals.Length; i++)
        {
            _signals[i] = new StageSignal();
        }

        _delay = runtime.Delay;
        _melded = runtime.Melded;
        _grouping = options.GroupMeld;
        _schedule = new PremeldSchedule(premeldThreads, options.Distance, database.LastAppended);
        _lastSubmitted = _lastMelded = _barrier = _schedule.Start;
        _groupNext = _finalNext = _schedule.Start + 1;

        // Premeld: the lanes' input slots (lane 0 also without premeld: the next stage reads it) and results.
        var lanes = Math.Max(premeldThreads, 1);
        _inputs = Lanes<Intention?>(lanes, window, null);
        _inputDecided = Lanes<MeldOutcome>(lanes, window, default);
        _inputBarriers = Lanes<long>(lanes, window, 0);
        _inputOrdinals = Lanes<long>(lanes, window, -1);
        _premeld = new MeldOperator[premeldThreads];
        _premeldNext = new long[premeldThreads];
        _laneDone = new long[premeldThreads];
        for (var i = 0; i < premeldThreads; i++)
        {
            _premeld[i] = new MeldOperator((byte)(i + 1), new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange), sequences?.Premeld[i] ?? 0);
            _premeldNext[i] = FirstOrdinalOf(i);
        }

        _results = new Intention?[window];
        _premeldAborts = new MeldOutcome[window];
        _resultOrdinals = EmptySlots(window);

        // Final meld's published states, starting with the one the pipeline starts from.
        var ring = (premeldThreads * options.Distance) + 3;
        _states = new DatabaseState?[ring];
        _stateOrdinals = EmptySlots(ring);
        if (premeldThreads > 0)
        {
            Publish(_schedule.Start, database.PinCurrent());
            if (_grouping && _schedule.Start % 2 == 0)
            {
                // "The state after" an odd ordinal is the state after its pair's predecessor.
                Publish(_schedule.Start + 1, database.PinCurrent());
            }
        }

        // Group meld: its units for final meld, and its operator.
        _units = new Unit[window];
        _unitOrdinals = EmptySlots(window);
        if (_grouping)
        {
            _group = new MeldOperator(options.GroupThreadId, new NodePool(NodePool.DefaultCapacity, database.MeldPool.Exchange), sequences?.Group ?? 0);
        }

        _cooperative = runtime.Threading.Cooperative;
        if (_cooperative)
        {
            // No thread: Submit, SubmitDecided, SubmitBarrier, WaitFor and Dispose run the stages on the caller's thread.
            Threading = new ResolvedThreading(false, null, Environment.ProcessorCount, 0) { Cooperative = true };
            _threads = [];
            return;
        }

        var policy = runtime.Threading.Resolve(premeldThreads + (_grouping ? 2 : 1));
        _spinOnly = policy.SpinOnly;
        // Not disposed: a thread that starts after the wait below gave up still sets it.
        var started = new ManualResetEventSlim();
        _threads = StartThreads(policy, runtime.StartOrder, started);

        // The final-meld thread sets its own priority (only a thread's own id is at hand) before
        // it takes any work: wait for it, so the policy reported says what the kernel granted.
        Threading = policy.FinalMeldNice is null || !started.Wait(TimeSpan.FromSeconds(10))
            ? policy
            : policy with { FinalMeldPriority = Volatile.Read(ref _finalMeldPriority) };
    }

    /// <summary>Refuses settings this pipeline cannot run (before anything is pinned or started).</summary>
    private static void CheckSettings(Database database, PipelineOptions options, PipelineRuntime runtime)
    {
        options.Validate();
        if (options.GroupFirst)
        {
            ThrowHelper.ThrowArgument(nameof(options), "the threaded pipeline premelds before it groups");
        }

        var window = runtime.Window;
        ArgumentOutOfRangeException.ThrowIfLessThan(window, 2);
        if (database.FinalMeld.ThreadId != 0)
        {
            ThrowHelper.ThrowArgument(nameof(database), "the final meld must have stage thread id 0; premeld threads use 1..t");
        }

        if (runtime.StartSequences is { } sequences && sequences.Premeld.Length != options.PremeldThreads)
        {
            ThrowHelper.ThrowArgument(nameof(runtime), $"the start sequences name {sequences.Premeld.Length} premeld threads, the pipeline has {options.PremeldThreads}");
        }
    }

    /// <summary><paramref name="lanes"/> arrays of <paramref name="slots"/> slots, each filled with <paramref name="empty"/>.</summary>
    private static T[][] Lanes<T>(int lanes, int slots, T empty)
    {
        var all = new T[lanes][];
        for (var i = 0; i < lanes; i++)
        {
            all[i] = new T[slots];
            Array.Fill(all[i], empty);
        }

        return all;
    }

    /// <summary>Ordinal slots, each −1 (free).</summary>
    private static long[] EmptySlots(int slots)
    {
        var ordinals = new long[slots];
        Array.Fill(ordinals, -1);
        return ordinals;
    }

    /// <summary>One thread per stage (0..t−1 premeld, t final meld, t + 1 group meld), started in <paramref name="startOrder"/>.</summary>
    private Thread[] StartThreads(ResolvedThreading policy, IReadOnlyList<int>? startOrder, ManualResetEventSlim finalMeldStarted)
    {
        var premeldThreads = _premeld.Length;
        var threads = new Thread[premeldThreads + (_grouping ? 2 : 1)];
        for (var i = 0; i < premeldThreads; i++)
        {
            var lane = i;
            threads[i] = new Thread(() => Run(() => StageLoop(lane), policy, 1 + lane)) { IsBackground = true, Name = $"premeld-{i + 1}" };
        }

        threads[premeldThreads] = new Thread(() => Run(() => StageLoop(premeldThreads), policy, 0, finalMeldStarted)) { IsBackground = true, Name = "final-meld" };
        if (_grouping)
        {
            threads[premeldThreads + 1] = new Thread(() => Run(() => StageLoop(premeldThreads + 1), policy, premeldThreads + 1)) { IsBackground = true, Name = "group-meld" };
        }

        foreach (var i in startOrder ?? Enumerable.Range(0, threads.Length).ToArray())
        {
            threads[i].Start();
        }

        return threads;
    }

    /// <summary>How the stage threads wait and whether they are pinned (resolved for this machine).</summary>
    public ResolvedThreading Threading { get; }

    /// <summary>The final-meld thread's Linux thread id (0 before it started, in cooperative mode, or elsewhere).</summary>
    internal int FinalMeldThreadId => Volatile.Read(ref _finalMeldThreadId);

    /// <summary>The premeld operators (their counters are premeld's statistics).</summary>
    public IReadOnlyList<MeldOperator> PremeldOperators => _premeld;

    /// <summary>The group-meld operator, when group meld is on.</summary>
    public MeldOperator? GroupOperator => _group;

    /// <summary>Why the pipeline stopped, when a stage failed; null while it runs.</summary>
    public Exception? Failure => _failure?.SourceException;

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

    private void Run(Action loop, ResolvedThreading policy, int stage, ManualResetEventSlim? started = null)
    {
        try
        {
            if (policy.PinnedCores is { } cores)
            {
                CoreAffinity.PinCurrentThread(cores[stage % cores.Length]);
            }

            if (started is not null)
            {
                if (OperatingSystem.IsLinux())
                {
                    Volatile.Write(ref _finalMeldThreadId, CoreAffinity.CurrentThreadId());
                }

                if (policy.FinalMeldNice is { } nice)
                {
                    Volatile.Write(ref _finalMeldPriority, CoreAffinity.SetCurrentThreadNice(nice));
                }

                started.Set();
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
}
