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

    /// <summary>Creates an empty database whose final meld runs with the given stage thread id.</summary>
    public Database(byte finalMeldThreadId = 0, NodePool? meldPool = null)
        : this(finalMeldThreadId, meldPool, null, 0, 0, 0)
    {
    }

    private Database(byte finalMeldThreadId, NodePool? meldPool, Node? root, long sequence, long lastMelded, long nextEphemeralSequence)
    {
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
    public static Database Restore(Node? root, long sequence, long lastMelded, byte finalMeldThreadId, long nextEphemeralSequence, NodePool? meldPool = null)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(sequence);
        ArgumentOutOfRangeException.ThrowIfLessThan(lastMelded, sequence);
        ArgumentOutOfRangeException.ThrowIfNegative(nextEphemeralSequence);
        return new Database(finalMeldThreadId, meldPool, root, sequence, lastMelded, nextEphemeralSequence);
    }

    /// <summary>The last committed state.</summary>
    public DatabaseState Current => Volatile.Read(ref _current);

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
        new(this, PinCurrent(), isolation, pool ?? NodePool.Current);

    /// <summary>Starts a transaction on an older state the caller holds pinned (it takes a pin of its own).</summary>
    public Transaction BeginAt(DatabaseState snapshot, IsolationLevel isolation = IsolationLevel.Serializable, NodePool? pool = null)
    {
        if (snapshot.Pins <= 0)
        {
            ThrowHelper.ThrowInvalidOperation($"{snapshot} is not pinned; pin it before starting a transaction on it");
        }

        snapshot.AddPin();
        return new Transaction(this, snapshot, isolation, pool ?? NodePool.Current);
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
    /// blocks) leave gaps; they are melded with <see cref="Skip"/>.
    /// </summary>
    public void Append(Intention intention, long ordinal, long position)
    {
        ArgumentNullException.ThrowIfNull(intention);
        if (ordinal <= _lastAppended)
        {
            ThrowHelper.ThrowInvalidOperation($"intention #{ordinal} appended out of order: #{_lastAppended} was appended already");
        }

        intention.Seal(ordinal, position);
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
        try
        {
            if (!intention.IsValidated)
            {
                // Normally done earlier (the pipeline validates on entry, as a deserializer would).
                IntentionValidator.Validate(intention);
            }

            outcome = _meld.Apply(intention, lcs, out var root, out var displaced);
            if (outcome.Committed)
            {
                var next = NewState(root, intention.Ordinal);
                next.Displaced = displaced;
                lcs.Newer = next;
                Volatile.Write(ref _current, next);
            }
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

        Reclaim();
        return outcome;
    }

    /// <summary>
    /// Records that intention <paramref name="ordinal"/> aborted before final meld (premeld or
    /// group meld found its conflict), so the next intention can be melded.
    /// </summary>
    public void Skip(long ordinal)
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
    public void SkipCommitted(long ordinal)
    {
        Skip(ordinal);
        var lcs = _current;
        var next = NewState(lcs.Root, ordinal);
        lcs.Newer = next;
        Volatile.Write(ref _current, next);
        Reclaim();
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
                list.ReturnAllTo(_meldPool);
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
