using System.Runtime.InteropServices;
using Hyder.Tree.Meld;

namespace Hyder.Tree.Pipeline;

/// <summary>How one process runs its pipeline: what may differ between servers (unlike <see cref="PipelineOptions"/>).</summary>
public sealed class PipelineRuntime
{
    /// <summary>Intentions submitted but not yet melded, at most.</summary>
    public int Window { get; init; } = 1024;

    /// <summary>Called before each stage step (tests inject delays here).</summary>
    public Action<PipelineStage, long>? Delay { get; init; }

    /// <summary>Called on the final-meld thread after each ordinal, with the new current state.</summary>
    public Action<long, MeldOutcome, DatabaseState>? Melded { get; init; }

    /// <summary>The order the threads start in (0..t−1 premeld, t final meld, t+1 group meld); null for ascending.</summary>
    public IReadOnlyList<int>? StartOrder { get; init; }

    /// <summary>
    /// Each stage's next ephemeral sequence at the start (a server restarted from a checkpoint
    /// continues its peers' numbering); null for a pipeline starting on a fresh log.
    /// </summary>
    public StageSequences? StartSequences { get; init; }

    /// <summary>Spinning and core pinning.</summary>
    public PipelineThreading Threading { get; init; } = new();

    /// <summary>
    /// Every submitted intention must be validated already (<see cref="Intention.IsValidated"/>):
    /// the submitter refuses one that is not, so final meld never validates (a server validates
    /// on its deserializer and executor threads, DESIGN §6). False: final meld validates what
    /// nobody did.
    /// </summary>
    public bool RequireValidated { get; init; }
}

/// <summary>The next ephemeral sequence number of each stage thread at one ordinal.</summary>
/// <param name="FinalMeld">Final meld (thread id 0).</param>
/// <param name="Premeld">Premeld thread i (thread id i + 1).</param>
/// <param name="Group">Group meld (thread id t + 1); 0 when group meld is off.</param>
public sealed record StageSequences(long FinalMeld, long[] Premeld, long Group);

/// <summary>How a stage waits for its input.</summary>
public enum SpinPolicy
{
    /// <summary>
    /// Busy-spin and pin when the machine has a core for every stage thread plus
    /// <see cref="PipelineThreading.SpareCores"/> for the reader, deserializers, executors and
    /// the log; otherwise spin a few rounds, then block until signalled.
    /// </summary>
    Auto,

    /// <summary>Busy-spin (Hyder II §5.2): lowest latency, but it takes a core per stage even when idle.</summary>
    Spin,

    /// <summary>
    /// Spin a few rounds (microseconds), then block until the stage that makes the input signals
    /// (<see cref="StageSignal"/>): an idle stage uses no CPU. (The host's <c>--spin yield</c>.)
    /// </summary>
    SpinThenYield,
}

/// <summary>Threading policy of the stage threads.</summary>
public sealed class PipelineThreading
{
    /// <summary>How a waiting stage spends its time.</summary>
    public SpinPolicy Spin { get; init; } = SpinPolicy.Auto;

    /// <summary>
    /// Pin each stage thread to its own core. Null: pin when the machine has a core for every
    /// stage thread plus <see cref="SpareCores"/> for the rest. Linux only; elsewhere
    /// pinning is skipped.
    /// </summary>
    public bool? PinToCores { get; init; }

    /// <summary>
    /// Cooperative mode: no stage thread is started; each call that hands the pipeline an ordinal
    /// (and <see cref="ThreadedPipeline.WaitFor"/>, <see cref="ThreadedPipeline.Dispose"/>) runs the
    /// stages on the caller's thread, round robin, until none can progress. The same stage code
    /// runs, in the same order per stage, so the states are the threaded mode's. For running a
    /// server on one thread in fixed order (the deterministic simulation, docs/simulation.md);
    /// <see cref="Spin"/> and <see cref="PinToCores"/> do not apply.
    /// </summary>
    public bool Cooperative { get; init; }

    /// <summary>
    /// Cores <see cref="SpinPolicy.Auto"/> leaves to everything but the stage threads (the log
    /// reader, deserializers, submitter, executors, the log) before it spins and pins: a spinning
    /// stage takes its core whether it has work or not.
    /// </summary>
    public const int SpareCores = 4;

    /// <summary>
    /// The <see cref="FinalMeldNice"/> measured to help a process whose clients run inside it (the
    /// YCSB tool's embedded target asks for it by default; docs/server.md, "Final meld's priority").
    /// </summary>
    public const int RaisedFinalMeldNice = -10;

    /// <summary>
    /// The Linux nice value (−20 to 19; the process's threads run at 0) the final-meld thread asks
    /// for when the stages block rather than spin: final meld is the serial step every
    /// transaction's outcome waits for, and on a machine whose cores it shares with the executors,
    /// the log and the clients, each time the scheduler preempts it every outcome waits longer. A
    /// lower value is a higher priority. The kernel grants a value below 0 only to a process with
    /// <c>CAP_SYS_NICE</c> or a soft <c>RLIMIT_NICE</c> of at least 20 − value (systemd's
    /// <c>LimitNICE=</c>); refused, the thread runs at the process's priority and
    /// <see cref="ResolvedThreading.FinalMeldPriority"/> says why. Null or 0 (the default): the
    /// thread is left alone; an engine does not change its host's scheduling unless the host asks
    /// (<see cref="RaisedFinalMeldNice"/>). A spinning final meld (<see cref="SpinPolicy.Spin"/>, or <see cref="SpinPolicy.Auto"/>
    /// on a roomy machine) already holds a core of its own and is left alone too: at a higher
    /// priority it would take a shared core from everything else.
    /// </summary>
    public int? FinalMeldNice { get; init; }

    /// <summary>The error for a nice value outside the kernel's −20..19, naming it as <paramref name="name"/>; null when it is in range.</summary>
    public static string? NiceError(int nice, string name = nameof(FinalMeldNice)) =>
        nice is < -20 or > 19 ? $"{name} {nice} is outside -20..19" : null;

    /// <summary>The policy for <paramref name="stageThreads"/> threads on this machine.</summary>
    public ResolvedThreading Resolve(int stageThreads)
    {
        var cores = Environment.ProcessorCount;
        var roomy = cores >= stageThreads + SpareCores;
        var spinOnly = Spin switch
        {
            SpinPolicy.Spin => true,
            SpinPolicy.SpinThenYield => false,
            _ => roomy,
        };
        var pin = (PinToCores ?? roomy) && OperatingSystem.IsLinux() && cores >= stageThreads;
        int[]? pinned = null;
        if (pin)
        {
            // Stage k on core cores − 1 − k: the highest cores, leaving core 0 to the OS and the rest.
            pinned = new int[stageThreads];
            for (var k = 0; k < stageThreads; k++)
            {
                pinned[k] = cores - 1 - k;
            }
        }

        if (FinalMeldNice is { } nice && NiceError(nice) is { } error)
        {
            ThrowHelper.ThrowArgument(nameof(FinalMeldNice), error);
        }

        var asked = !spinOnly && OperatingSystem.IsLinux() && FinalMeldNice is { } n && n != 0 ? FinalMeldNice : null;
        return new ResolvedThreading(spinOnly, pinned, cores, stageThreads) { FinalMeldNice = asked };
    }
}

/// <summary>The threading policy chosen for this machine.</summary>
/// <param name="SpinOnly">True: stages busy-spin; false: spin a few rounds, then block until signalled.</param>
/// <param name="PinnedCores">The core of each stage (index 0 final meld, 1..t premeld, t + 1 group), or null when not pinned.</param>
/// <param name="Cores">Cores the process may use.</param>
/// <param name="StageThreads">Stage threads.</param>
public sealed record ResolvedThreading(bool SpinOnly, int[]? PinnedCores, int Cores, int StageThreads)
{
    /// <summary>True when the stages run cooperatively on the callers' thread (<see cref="PipelineThreading.Cooperative"/>).</summary>
    public bool Cooperative { get; init; }

    /// <summary>The nice value the final-meld thread asks for (<see cref="PipelineThreading.FinalMeldNice"/>); null when it is left alone.</summary>
    public int? FinalMeldNice { get; init; }

    /// <summary>
    /// What became of <see cref="FinalMeldNice"/> once the thread started: null when nothing was
    /// asked; otherwise "final meld at nice N", or why the kernel refused it.
    /// </summary>
    public string? FinalMeldPriority { get; init; }

    /// <inheritdoc/>
    public override string ToString() => Cooperative ? "no stage threads: the stages run cooperatively on the submitting thread" :
        $"{StageThreads} stage threads on {Cores} cores: {(SpinOnly ? "spin" : "spin, then block")}, {(PinnedCores is null ? "not pinned" : "pinned to cores " + string.Join(",", PinnedCores))}"
        + (FinalMeldPriority ?? (FinalMeldNice is { } nice ? $", final meld asks for nice {nice}" : ""));
}

/// <summary>
/// A checkpoint barrier being captured: each stage's next ephemeral sequence once it has done
/// everything up to <see cref="Ordinal"/>, and the state after it.
/// </summary>
public sealed class PipelineBarrier
{
    private readonly Database _database;
    private readonly long[] _premeld;
    private readonly int[] _premeldSet;
    private readonly TaskCompletionSource<StageSequences> _done;
    private long _final;
    private long _group;
    private int _remaining;
    private DatabaseState? _state;

    internal PipelineBarrier(Database database, long ordinal, int premeldThreads, bool grouping, bool cooperative = false)
    {
        // Threaded: the stage that completes the barrier must not run its waiter's continuation.
        // Cooperative: there is one thread, and a continuation posted elsewhere would leave it.
        _done = new(cooperative ? TaskCreationOptions.None : TaskCreationOptions.RunContinuationsAsynchronously);
        _database = database;
        Ordinal = ordinal;
        _premeld = new long[premeldThreads];
        _premeldSet = new int[premeldThreads];
        _remaining = 1 + premeldThreads + (grouping ? 1 : 0);
    }

    /// <summary>The barrier: the ordinal whose state a restart begins from.</summary>
    public long Ordinal { get; }

    /// <summary>Completes when every stage has passed the barrier.</summary>
    public Task<StageSequences> Sequences => _done.Task;

    /// <summary>True once every stage reported.</summary>
    public bool IsComplete => _done.Task.IsCompleted;

    /// <summary>The state after the barrier, pinned until <see cref="Release"/>; null before completion.</summary>
    public DatabaseState? State => IsComplete ? _state : null;

    /// <summary>Releases the barrier state's pin.</summary>
    public void Release()
    {
        if (Interlocked.Exchange(ref _state, null) is { } s)
        {
            _database.Release(s);
        }
    }

    internal void SetPremeld(int lane, long next)
    {
        // The lane and the submitter may both see the lane done; the first report counts (both read the same, stable counter).
        if (Interlocked.Exchange(ref _premeldSet[lane], 1) == 0)
        {
            _premeld[lane] = next;
            Arrive();
        }
    }

    internal void SetGroup(long next)
    {
        _group = next;
        Arrive();
    }

    internal void SetFinal(long next, DatabaseState state)
    {
        _final = next;
        _state = state;
        Arrive();
    }

    private void Arrive()
    {
        if (Interlocked.Decrement(ref _remaining) == 0)
        {
            Interlocked.MemoryBarrier();
            _done.SetResult(new StageSequences(_final, (long[])_premeld.Clone(), _group));
        }
    }
}

/// <summary>Pins the calling thread to one core (Linux sched_setaffinity); a no-op elsewhere.</summary>
internal static partial class CoreAffinity
{
    public static bool PinCurrentThread(int core)
    {
        if (!OperatingSystem.IsLinux() || core < 0 || core >= 1024)
        {
            return false;
        }

        Span<ulong> mask = stackalloc ulong[16];
        mask.Clear();
        mask[core / 64] = 1UL << (core % 64);
        return SchedSetAffinity(0, (nuint)(mask.Length * sizeof(ulong)), ref mask[0]) == 0;
    }

    [LibraryImport("libc", EntryPoint = "sched_setaffinity", SetLastError = true)]
    private static partial int SchedSetAffinity(int pid, nuint size, ref ulong mask);

    /// <summary>
    /// Sets the calling thread's nice value (Linux: <c>setpriority</c> on its thread id) and
    /// returns what happened, for <see cref="ResolvedThreading.FinalMeldPriority"/>.
    /// </summary>
    public static string SetCurrentThreadNice(int nice)
    {
        if (SetPriority(PrioProcess, GetTid(), nice) == 0)
        {
            return $", final meld at nice {nice}";
        }

        return RefusedNice(nice, Marshal.GetLastPInvokeError());
    }

    /// <summary>The calling thread's Linux thread id.</summary>
    public static int CurrentThreadId() => GetTid();

    /// <summary>The description of a refused nice value (<paramref name="errno"/>: the kernel's error).</summary>
    internal static string RefusedNice(int nice, int errno) => errno is EAcces or EPerm
        ? $", final meld's priority not raised: nice {nice} needs CAP_SYS_NICE or RLIMIT_NICE of at least {20 - nice} (systemd: LimitNICE={nice})"
        : $", final meld's priority not changed: setpriority to nice {nice} failed with errno {errno}";

    private const int PrioProcess = 0;
    private const int EPerm = 1;
    private const int EAcces = 13;

    [LibraryImport("libc", EntryPoint = "gettid")]
    private static partial int GetTid();

    [LibraryImport("libc", EntryPoint = "setpriority", SetLastError = true)]
    private static partial int SetPriority(int which, int who, int prio);
}
