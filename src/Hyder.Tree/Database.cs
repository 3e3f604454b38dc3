using Hyder.Tree.Commutative;
using Hyder.Tree.Meld;
using Hyder.Tree.Memory;

namespace Hyder.Tree;

/// <summary>
/// One server's view of the database in a single process: the chain of retained committed states,
/// an in-process log order for intentions, and the final-meld operator. The transaction server
/// (a later layer) feeds it from the shared log instead; tests and benchmarks use it directly.
/// </summary>
/// <remarks>
/// <para>Reclamation (docs/meld.md, "Reclaiming nodes"): each published state carries the nodes
/// its meld displaced. They are reachable only from older states, so once the oldest retained
/// state has no pin, the next state's displaced nodes return to the final-meld thread's pool and
/// the oldest state is dropped. Transactions pin their snapshot until their intention is melded.</para>
/// <para>Threading: <see cref="Begin"/>, <see cref="PinCurrent"/> and <see cref="Release"/> may be
/// called from executor threads; appending and melding belong to one thread.</para>
/// </remarks>
public sealed class Database
{
    private readonly MeldOperator _meld;
    private readonly NodePool _meldPool;
    private readonly Stack<DatabaseState> _spareStates = new();
    private DatabaseState _current;
    private DatabaseState _oldest;
    private long _lastAppended;
    private long _lastMelded;
    private ISplitPhases? _phases;
    private DatabaseState? _reconciled;
    private TaskCompletionSource _reconciledSignal = new(TaskCreationOptions.RunContinuationsAsynchronously);
    private readonly Queue<TaskCompletionSource> _deferredSignals = new();
    private bool _deferWaiters;

    /// <summary>
    /// True: final meld does not release what waits for <see cref="WhenReconciledAfter"/>; the
    /// owner's next <see cref="ReleaseReconciledWaiters"/> does, and the waiters continue inline on
    /// its thread instead of on the thread pool. A cooperative server (one thread, docs/simulation.md)
    /// releases them after the submit that melded the ordinal, as it delivers outcomes, never inside
    /// a stage step. Set it before anything waits.
    /// </summary>
    public bool DeferReconciledWaiters
    {
        get => _deferWaiters;
        set
        {
            _deferWaiters = value;
            Volatile.Write(ref _reconciledSignal, NewReconciledSignal());
        }
    }

    /// <summary>With <see cref="DeferReconciledWaiters"/>: lets the waiters of every reconciled state published since the last call continue, inline.</summary>
    public void ReleaseReconciledWaiters()
    {
        while (_deferredSignals.TryDequeue(out var signal))
        {
            signal.TrySetResult();
        }
    }

    private TaskCompletionSource NewReconciledSignal() =>
        new(_deferWaiters ? TaskCreationOptions.None : TaskCreationOptions.RunContinuationsAsynchronously);

    /// <summary>Creates an empty database whose final meld runs with the given stage thread id.</summary>
    /// <param name="finalMeldThreadId">Final meld's stage thread id (part of every ephemeral id).</param>
    /// <param name="meldPool">Final meld's node pool (a new one when null).</param>
    /// <param name="values">
    /// The pool written values are copied into and freed back to (docs/value-storage.md), or null
    /// to keep callers' arrays as they are. With a pool, a value read is valid only while the
    /// transaction that read it (or a pin of its snapshot) is held: copy it to keep it.
    /// </param>
    public Database(byte finalMeldThreadId = 0, NodePool? meldPool = null, ValuePool? values = null)
        : this(finalMeldThreadId, meldPool, null, 0, 0, 0, values)
    {
    }

    private Database(byte finalMeldThreadId, NodePool? meldPool, Node? root, long sequence, long lastMelded, long nextEphemeralSequence, ValuePool? values)
    {
        Values = values;
        _meldPool = meldPool ?? new NodePool(NodePool.DefaultCapacity, new NodeExchange());
        _meld = new MeldOperator(finalMeldThreadId, _meldPool, nextEphemeralSequence);
        _current = _oldest = new DatabaseState(root, sequence);
        _lastAppended = _lastMelded = lastMelded;
    }

    /// <summary>
    /// A database that starts from a loaded state (a checkpoint): state #<paramref name="sequence"/>
    /// after melding every intention up to <paramref name="lastMelded"/> (later than the state's
    /// sequence when the last ones aborted), so the next intention appended is #lastMelded + 1;
    /// final meld's ephemeral ids continue from <paramref name="nextEphemeralSequence"/>, as on the
    /// server that never stopped.
    /// </summary>
    /// <remarks>
    /// With <paramref name="values"/>, the loaded state's payloads stay ordinary arrays (they did
    /// not come from the pool); the values written afterwards are pooled.
    /// </remarks>
    public static Database Restore(Node? root, long sequence, long lastMelded, byte finalMeldThreadId, long nextEphemeralSequence, NodePool? meldPool = null, ValuePool? values = null)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(sequence);
        ArgumentOutOfRangeException.ThrowIfLessThan(lastMelded, sequence);
        ArgumentOutOfRangeException.ThrowIfNegative(nextEphemeralSequence);
        return new Database(finalMeldThreadId, meldPool, root, sequence, lastMelded, nextEphemeralSequence, values);
    }

    /// <summary>The last committed state.</summary>
    public DatabaseState Current => Volatile.Read(ref _current);

    /// <summary>The pool written values are copied into, or null when the database keeps callers' arrays.</summary>
    public ValuePool? Values { get; }

    /// <summary>The final-meld operator (its counters are the meld statistics).</summary>
    public MeldOperator FinalMeld => _meld;

    /// <summary>The final-meld thread's pool (where reclaimed nodes go).</summary>
    public NodePool MeldPool => _meldPool;

    /// <summary>The ordinal of the last intention appended.</summary>
    public long LastAppended => _lastAppended;

    /// <summary>Number of states retained (the current one included).</summary>
    public int RetainedStates
    {
        get
        {
            var n = 0;
            for (var s = _oldest; s is not null; s = s.Newer)
            {
                n++;
            }

            return n;
        }
    }

    /// <summary>Starts a transaction on the current state (pinning it).</summary>
    public Transaction Begin(IsolationLevel isolation = IsolationLevel.Serializable, NodePool? pool = null) =>
        Transaction.Rent(this, PinCurrent(), isolation, pool ?? NodePool.Current);

    /// <summary>Starts a transaction on an older state the caller holds pinned (it takes a pin of its own).</summary>
    public Transaction BeginAt(DatabaseState snapshot, IsolationLevel isolation = IsolationLevel.Serializable, NodePool? pool = null)
    {
        if (snapshot.Pins <= 0)
        {
            ThrowHelper.ThrowInvalidOperation($"{snapshot} is not pinned; pin it before starting a transaction on it");
        }

        snapshot.AddPin();
        return Transaction.Rent(this, snapshot, isolation, pool ?? NodePool.Current);
    }

    /// <summary>Pins and returns the current state; give it back with <see cref="Release"/>.</summary>
    public DatabaseState PinCurrent()
    {
        while (true)
        {
            var s = Current;
            if (s.TryPin())
            {
                return s;
            }
        }
    }

    /// <summary>Releases a pin taken by <see cref="PinCurrent"/> (or a transaction).</summary>
    public void Release(DatabaseState state) => state.Unpin();

    /// <summary>Gives the intention the next place in this process's log (the in-process log: position = ordinal).</summary>
    public void Append(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        var ordinal = _lastAppended + 1;
        intention.Seal(ordinal, ordinal);
        _lastAppended = ordinal;
    }

    /// <summary>
    /// Fixes an intention read from the shared log at its place: ordinal <paramref name="ordinal"/>
    /// (intentions counted in log order, every server alike) at log position
    /// <paramref name="position"/>. Ordinals decided without an intention (fillers, rejected
    /// blocks) leave gaps; they are melded with <see cref="Skip"/>. An intention already sealed
    /// there (a server's deserializer seals and validates a decoded intention on its own thread)
    /// is taken as it is.
    /// </summary>
    public void Append(Intention intention, long ordinal, long position)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (ordinal <= _lastAppended)
        {
            ThrowHelper.ThrowInvalidOperation($"intention #{ordinal} appended out of order: #{_lastAppended} was appended already");
        }

        if (intention.IsSealed)
        {
            if (intention.Ordinal != ordinal || intention.Position != position)
            {
                ThrowHelper.ThrowInvalidOperation($"{intention} is sealed elsewhere than #{ordinal} @{position}");
            }
        }
        else
        {
            intention.Seal(ordinal, position);
        }

        _lastAppended = ordinal;
    }

    /// <summary>
    /// Melds the next appended intention into the current state and publishes the result; the
    /// intention's snapshot pin is released and states nobody holds are reclaimed. A group
    /// intention (<see cref="Intention.IsGroup"/>) covers two ordinals and decides both.
    /// </summary>
    public MeldOutcome Meld(Intention intention)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (intention.FirstOrdinal != _lastMelded + 1)
        {
            ThrowHelper.ThrowInvalidOperation($"{intention} melded out of order: the next is #{_lastMelded + 1}");
        }

        var lcs = _current;
        MeldOutcome outcome;
        Node? root = null;
        NodeList? displaced = null;
        try
        {
            if (!intention.IsValidated)
            {
                // Normally done earlier (the pipeline validates on entry, as a deserializer would).
                IntentionValidator.Validate(intention);
            }

            intention.PrefetchInsideNodes();
            outcome = _meld.Apply(intention, lcs, out root, out displaced);
        }
        catch (IntentionRejectedException e)
        {
            // Every server rejects the same intention the same way; the state is untouched and its
            // nodes are left to the GC (a hostile intention's pointers are not trusted for recycling).
            outcome = new MeldOutcome { Cause = AbortCause.Rejected, RejectReason = e.Message };
            _meld.Counters.Add(outcome);
        }
        finally
        {
            _lastMelded = intention.Ordinal;
            intention.ReleasePins();
        }

        Advance(intention.Ordinal, outcome.Committed ? root : lcs.Root, outcome.Committed ? displaced : null, outcome.Committed, noOp: false);
        return outcome;
    }

    /// <summary>
    /// Records that intention <paramref name="ordinal"/> aborted before final meld (premeld or
    /// group meld found its conflict), so the next intention can be melded.
    /// </summary>
    public void Skip(long ordinal)
    {
        Next(ordinal);
        Advance(ordinal, _current.Root, null, changed: false, noOp: false);
    }

    private void Next(long ordinal)
    {
        if (ordinal != _lastMelded + 1)
        {
            ThrowHelper.ThrowInvalidOperation($"intention #{ordinal} skipped out of order: the next is #{_lastMelded + 1}");
        }

        _lastMelded = ordinal;
    }

    /// <summary>
    /// Records that ordinal <paramref name="ordinal"/> committed without changing the tree (a
    /// filler or a checkpoint marker): the next state has the same tree and sequence
    /// <paramref name="ordinal"/>, so a transaction that starts on it names a state every server
    /// has, and a server restarted there has too.
    /// </summary>
    /// <remarks>With split phases on, a committed no-op also ends the running phase (docs/doppel.md).</remarks>
    public void SkipCommitted(long ordinal)
    {
        Next(ordinal);
        Advance(ordinal, _current.Root, null, changed: true, noOp: true);
    }

    /// <summary>
    /// Doppel's split phases (docs/doppel.md, "Split phases"), or null (the default): every
    /// operation is then applied to the tree by final meld. Set once, before the first meld; it
    /// becomes final meld's side table too. The state current then counts as reconciled.
    /// </summary>
    public ISplitPhases? SplitPhases
    {
        get => _phases;
        set
        {
            if (_phases is not null)
            {
                ThrowHelper.ThrowInvalidOperation("split phases are set once, before melding");
            }

            _phases = value;
            _meld.SplitTable = value;
            if (value is not null)
            {
                var s = PinCurrent();
                s.IsReconciled = true;
                s.FollowingSplitKeys = value.SplitKeys;
                _reconciled = s;
            }
        }
    }

    /// <summary>
    /// The last state published at the end of a split phase (pinned by the database until the
    /// next one); null without split phases. A transaction that must not read a split key inside a
    /// phase runs here or on a later reconciled state.
    /// </summary>
    public DatabaseState? Reconciled => Volatile.Read(ref _reconciled);

    /// <summary>Pins and returns <see cref="Reconciled"/> (give it back with <see cref="Release"/>); null without split phases.</summary>
    public DatabaseState? PinReconciled()
    {
        while (true)
        {
            var s = Reconciled;
            if (s is null || s.TryPin())
            {
                return s;
            }
        }
    }

    /// <summary>
    /// Completes once a reconciled state newer than state #<paramref name="sequence"/> is published
    /// (at once when there is one already, or without split phases).
    /// </summary>
    public Task WhenReconciledAfter(long sequence)
    {
        var signal = Volatile.Read(ref _reconciledSignal);
        var r = Reconciled;
        if (r is null || r.Sequence > sequence)
        {
            return Task.CompletedTask;
        }

        if (!_deferWaiters)
        {
            return signal.Task;
        }

        // Cooperative: a task of its own per waiter, completed by a synchronous continuation of the
        // signal. When several await one task, its completion runs one of them inline and queues the
        // others to the thread pool (Task.RunContinuations), off the one thread whose order decides
        // the run; synchronous continuations run inline, in the order they were registered.
        var own = new TaskCompletionSource();
        signal.Task.ContinueWith(static (_, state) => ((TaskCompletionSource)state!).TrySetResult(), own, CancellationToken.None, TaskContinuationOptions.ExecuteSynchronously, TaskScheduler.Default);
        return own.Task;
    }

    /// <summary>
    /// After ordinal <paramref name="ordinal"/> is decided: ends the split phase there if it does
    /// (reconciling the side table into the tree) and publishes the state when the tree changed,
    /// the ordinal is a committed no-op, or a phase ended.
    /// </summary>
    private void Advance(long ordinal, Node? root, NodeList? displaced, bool changed, bool noOp)
    {
        var phases = _phases;
        var reconciled = false;
        TaskCompletionSource? signal = null;
        if (phases is not null && phases.EndsPhase(ordinal, noOp))
        {
            var hadSplitKeys = phases.SplitKeys is not null;
            var values = phases.EndPhase(ordinal);
            if (values.Count > 0)
            {
                root = _meld.Reconcile(root, values, out var more);
                if (displaced is null)
                {
                    displaced = more;
                }
                else
                {
                    for (var i = 0; i < more.Count; i++)
                    {
                        displaced.Add(more[i]);
                    }

                    more.Clear();
                    _meld.ReturnList(more);
                }
            }

            reconciled = true;
            changed |= hadSplitKeys || values.Count > 0;
        }

        if (changed)
        {
            var lcs = _current;
            Invariant.Assert(lcs.Newer is null && lcs.Sequence < ordinal, $"state #{ordinal} published after {lcs}, which is not the newest");
            var next = NewState(root, ordinal);
            AssertSampledState(next);
            next.Displaced = displaced;
            next.IsReconciled = reconciled;
            next.SplitKeys = reconciled ? null : phases?.SplitKeys;
            next.FollowingSplitKeys = reconciled ? phases!.SplitKeys : null;
            lcs.Newer = next;
            Volatile.Write(ref _current, next);
            if (reconciled)
            {
                next.AddPin();
                var old = _reconciled;
                Volatile.Write(ref _reconciled, next);
                old?.Unpin();
                signal = Interlocked.Exchange(ref _reconciledSignal, NewReconciledSignal());
            }
        }
        else if (displaced is not null)
        {
            ThrowHelper.ThrowInvariant($"ordinal #{ordinal} displaced nodes without publishing a state");
        }

        Reclaim();
        if (signal is not null)
        {
            if (_deferWaiters)
            {
                _deferredSignals.Enqueue(signal);
            }
            else
            {
                signal.TrySetResult();
            }
        }
    }

    /// <summary>Runs a transaction's intention through the log and meld (a convenience for single-threaded use).</summary>
    public MeldOutcome Commit(Transaction transaction)
    {
        var intention = transaction.Complete();
        if (intention is null)
        {
            return new MeldOutcome { Committed = true, Serial = true };
        }

        Append(intention);
        return Meld(intention);
    }

    /// <summary>Loads sorted, distinct pairs into an empty database as one serial intention.</summary>
    public void BulkLoad(IReadOnlyList<KeyValuePair<byte[], byte[]>> sortedPairs)
    {
        ArgumentNullException.ThrowIfNull(sortedPairs);
        if (_current.Root is not null || _lastAppended != 0)
        {
            ThrowHelper.ThrowInvalidOperation("bulk load needs an empty database");
        }

        using var tx = Begin(IsolationLevel.SnapshotIsolation, _meldPool);
        tx.LoadSorted(sortedPairs);
        Commit(tx);
    }

    private DatabaseState NewState(Node? root, long sequence)
    {
        if (_spareStates.Count == 0)
        {
            return new DatabaseState(root, sequence);
        }

        var s = _spareStates.Pop();
        s.Reuse(root, sequence);
        return s;
    }

    /// <summary>States checked whole by <see cref="AssertSampledState"/>: one in this many ordinals.</summary>
    private const long StateCheckInterval = 256;

    /// <summary>
    /// Debug tier: a published state, whole (<see cref="TreeInspector.ValidateState"/>: order,
    /// exact AVL heights, versions, no pooled node, no read-only copy, no operation list), at one
    /// ordinal in <see cref="StateCheckInterval"/>. Meld checks the part it builds of every state
    /// (MeldOperator.AssertOutput); this catches what that cannot see, such as a node changed in
    /// place after it was published, at a cost of O(n) per 256 ordinals. A new state object also
    /// holds no pin and no displaced nodes.
    /// </summary>
    [System.Diagnostics.Conditional("DEBUG")]
    private static void AssertSampledState(DatabaseState state)
    {
        Invariant.Assert(state.Pins == 0 && state.Displaced is null && state.Newer is null, $"{state} is published while still in use ({state.Pins} pins)");
        if (state.Sequence % StateCheckInterval == 0)
        {
            TreeInspector.ValidateState(state.Root);
        }
    }

    private void Reclaim()
    {
        while (_oldest != _current)
        {
            var next = _oldest.Newer!;
            if (!_oldest.TryRetire())
            {
                return;
            }

            if (next.Displaced is { } list)
            {
                // Every holder of a dying payload is gone with the older states (docs/value-storage.md).
                list.ReturnAllTo(_meldPool, Values);
                _meld.ReturnList(list);
                next.Displaced = null;
            }

            var retired = _oldest;
            retired.Newer = null;
            _oldest = next;

            // The retired state object is reused for a later state. Nothing can still hold it: it
            // had no pins and refused new ones, and intentions pin their snapshots until melded.
            _spareStates.Push(retired);
        }
    }
}
