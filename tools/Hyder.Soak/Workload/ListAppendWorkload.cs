using System.Buffers.Binary;
using Hyder.Checker;
using Hyder.Client;

namespace Hyder.Soak.Workload;

/// <summary>
/// Elle's list-append workload over Hyder's keys and values: list key k is the key
/// <c>"L" + k (8 bytes, big-endian)</c>, its value the appended longs (8 bytes each,
/// little-endian). An append reads the list and writes it back one longer, in a serializable
/// interactive transaction, so the value each append adds is unique to its key.
/// </summary>
public static class ListCodec
{
    /// <summary>The key of list <paramref name="k"/>.</summary>
    public static byte[] Key(long k)
    {
        var key = new byte[9];
        key[0] = (byte)'L';
        BinaryPrimitives.WriteInt64BigEndian(key.AsSpan(1), k);
        return key;
    }

    /// <summary>The list a value holds (empty for an absent key).</summary>
    public static long[] Decode(byte[]? value)
    {
        if (value is null)
        {
            return [];
        }

        if (value.Length % 8 != 0)
        {
            throw new InvalidDataException($"a list value of {value.Length} bytes is not a whole number of longs");
        }

        var list = new long[value.Length / 8];
        for (var i = 0; i < list.Length; i++)
        {
            list[i] = BinaryPrimitives.ReadInt64LittleEndian(value.AsSpan(i * 8));
        }

        return list;
    }

    /// <summary>The list in <paramref name="value"/> with <paramref name="element"/> appended.</summary>
    public static byte[] Append(byte[]? value, long element)
    {
        var old = value ?? [];
        var next = new byte[old.Length + 8];
        old.CopyTo(next, 0);
        BinaryPrimitives.WriteInt64LittleEndian(next.AsSpan(old.Length), element);
        return next;
    }
}

/// <summary>The lists a bounded workload deleted.</summary>
/// <param name="Reads">Each deleted list's read in its delete transaction (recorded in the history): where its acknowledged appends are looked for.</param>
/// <param name="Unverified">Lists deleted by a retry after a delete of unknown outcome: their reads are not in the history and their appends are not checked.</param>
public sealed record DeletedLists(IReadOnlyDictionary<long, long[]> Reads, IReadOnlySet<long> Unverified)
{
    /// <summary>Nothing deleted.</summary>
    public static DeletedLists None { get; } = new(new Dictionary<long, long[]>(), new HashSet<long>());

    /// <summary>Whether <paramref name="key"/> was deleted.</summary>
    public bool Contains(long key) => Reads.ContainsKey(key) || Unverified.Contains(key);
}

/// <summary>Counts of a workload's transactions by outcome.</summary>
/// <param name="Ok">Committed (acknowledged).</param>
/// <param name="Failed">Certainly not committed (aborted, or failed before commit was asked).</param>
/// <param name="Unknown">Outcome unknown (the commit call failed: timeout, lost connection, a killed server).</param>
public readonly record struct OutcomeCounts(long Ok, long Failed, long Unknown);

/// <summary>
/// Records a client history for the checker, thread-safe: one process per client task, each with
/// at most one transaction outstanding.
/// </summary>
public sealed class HistoryRecorder
{
    private readonly HistoryBuilder _builder = new();
    private readonly Lock _gate = new();
    private readonly List<(long Key, long Value)> _acknowledged = [];
    private long _ok;
    private long _failed;
    private long _unknown;

    /// <summary>Outcomes so far.</summary>
    public OutcomeCounts Counts => new(Interlocked.Read(ref _ok), Interlocked.Read(ref _failed), Interlocked.Read(ref _unknown));

    /// <summary>Every append whose transaction committed (was acknowledged), in completion order.</summary>
    public IReadOnlyList<(long Key, long Value)> Acknowledged
    {
        get
        {
            lock (_gate)
            {
                return _acknowledged.ToArray();
            }
        }
    }

    /// <summary>Records an invocation.</summary>
    public void Invoke(int process, Mop[] mops)
    {
        lock (_gate)
        {
            _builder.Invoke(process, mops);
        }
    }

    /// <summary>Records a commit with the transaction as it ran.</summary>
    public void Ok(int process, Mop[] completed)
    {
        lock (_gate)
        {
            _builder.Ok(process, completed);
            foreach (var mop in completed)
            {
                if (mop.Kind == MopKind.Append)
                {
                    _acknowledged.Add((mop.Key, mop.Value!.Value));
                }
            }
        }

        Interlocked.Increment(ref _ok);
    }

    /// <summary>Records a transaction that certainly did not commit.</summary>
    public void Fail(int process)
    {
        lock (_gate)
        {
            _builder.Fail(process);
        }

        Interlocked.Increment(ref _failed);
    }

    /// <summary>Records a transaction whose outcome is unknown.</summary>
    public void Info(int process)
    {
        lock (_gate)
        {
            _builder.Info(process);
        }

        Interlocked.Increment(ref _unknown);
    }

    /// <summary>The history so far.</summary>
    public History Build()
    {
        lock (_gate)
        {
            return _builder.Build();
        }
    }
}

/// <summary>
/// Client tasks running list-append transactions (from <see cref="TxnGenerator"/>, lists only)
/// against a cluster's servers, one attempt per transaction, each recorded in a
/// <see cref="HistoryRecorder"/>: a commit is <c>ok</c> (acknowledged), an abort or a failure before
/// commit was asked is <c>fail</c>, a failed commit call is <c>info</c>.
/// </summary>
/// <remarks>
/// A list retires after <see cref="MaxWritesPerKey"/> appends and a fresh key takes its place
/// (Elle's scheme), so with <c>deleteRetired</c> off the database gains a list for every 32 appends.
/// With it on, the data set is bounded: once a retired list has no transaction in flight, a deleter
/// task reads it and deletes it in one serializable transaction. The read is recorded in the
/// history like any read (the checker sees the whole, untruncated list; nothing checked reads the
/// key afterwards, since the generator never names a retired key again) and is where the
/// acknowledged appends of that list are looked for at the end (<see cref="Verifier"/>). A delete
/// whose commit outcome is unknown is retried without recording its read (the list may already be
/// gone, and an empty read after full ones is no list-append history); that list's appends are
/// then counted as unverified instead of checked.
/// </remarks>
public sealed class ListAppendWorkload
{
    /// <summary>Appends after which a list retires.</summary>
    public const int MaxWritesPerKey = 32;

    private readonly TxnGenerator _generator;
    private readonly Lock _gate = new();
    private readonly bool _deleteRetired;
    private readonly RetiredLists _retired = new(MaxWritesPerKey);
    private readonly Dictionary<long, long[]> _deleted = [];
    private readonly HashSet<long> _unverified = [];
    private readonly HashSet<long> _inDoubt = [];
    private long _deletesOk;
    private long _deletesNotOk;

    /// <summary>Creates the workload.</summary>
    /// <param name="recorder">Where the history goes.</param>
    /// <param name="seed">The generator's seed.</param>
    /// <param name="activeKeys">Lists in use at a time.</param>
    /// <param name="deleteRetired">Delete each retired list once nothing uses it (a bounded data set).</param>
    public ListAppendWorkload(HistoryRecorder recorder, int seed, int activeKeys = 8, bool deleteRetired = false)
    {
        Recorder = recorder;
        _deleteRetired = deleteRetired;
        _generator = new TxnGenerator(new WorkloadOptions { Lists = true, Registers = false, ActiveKeys = activeKeys, MaxWritesPerKey = MaxWritesPerKey, MinOps = 1, MaxOps = 4 }, seed);
    }

    /// <summary>The history.</summary>
    public HistoryRecorder Recorder { get; }

    /// <summary>Retired lists deleted so far (committed deletes).</summary>
    public long DeletesOk => Interlocked.Read(ref _deletesOk);

    /// <summary>Delete transactions that aborted, failed or whose outcome is unknown (each is tried again).</summary>
    public long DeletesNotOk => Interlocked.Read(ref _deletesNotOk);

    /// <summary>Retired lists waiting for their delete.</summary>
    public int PendingDeletes
    {
        get
        {
            lock (_gate)
            {
                return _retired.Pending;
            }
        }
    }

    /// <summary>The deleted lists so far: each one's read in its delete transaction, and the lists whose read could not be recorded.</summary>
    public DeletedLists Deleted
    {
        get
        {
            lock (_gate)
            {
                return new DeletedLists(new Dictionary<long, long[]>(_deleted), new HashSet<long>(_unverified));
            }
        }
    }

    /// <summary>Runs <paramref name="processes"/> client tasks, process p on <paramref name="clients"/>[p mod n], until <paramref name="stop"/>.</summary>
    /// <param name="clients">One client per server.</param>
    /// <param name="processes">Client tasks.</param>
    /// <param name="firstProcess">The first task's process number in the history.</param>
    /// <param name="stop">Ends the run; a transaction in flight then completes or is recorded as unknown.</param>
    /// <remarks>With <c>deleteRetired</c>, one more task (process <paramref name="firstProcess"/> + <paramref name="processes"/>) deletes retired lists.</remarks>
    public Task RunAsync(IReadOnlyList<HyderClient> clients, int processes, int firstProcess, CancellationToken stop) =>
        Task.WhenAll(Enumerable.Range(0, processes).Select(p => Task.Run(() => RunProcessAsync(clients[p % clients.Count], firstProcess + p, stop), CancellationToken.None))
            .Append(_deleteRetired ? Task.Run(() => RunDeleterAsync(clients, firstProcess + processes, stop), CancellationToken.None) : Task.CompletedTask));

    private async Task RunProcessAsync(HyderClient client, int process, CancellationToken stop)
    {
        while (!stop.IsCancellationRequested)
        {
            Mop[] mops;
            lock (_gate)
            {
                mops = _generator.Next();
                if (_deleteRetired)
                {
                    _retired.Began(mops);
                }
            }

            bool answered;
            try
            {
                answered = await RunOneAsync(client, process, mops).ConfigureAwait(false);
            }
            finally
            {
                if (_deleteRetired)
                {
                    lock (_gate)
                    {
                        _retired.Ended(mops);
                    }
                }
            }

            if (!answered)
            {
                // The server is down or unreachable: do not spin against it.
                try
                {
                    await Task.Delay(100, stop).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    private async Task RunDeleterAsync(IReadOnlyList<HyderClient> clients, int process, CancellationToken stop)
    {
        var turn = 0;
        while (!stop.IsCancellationRequested)
        {
            long key;
            lock (_gate)
            {
                if (!_retired.TryTake(out key))
                {
                    key = -1;
                }
            }

            bool deleted;
            if (key < 0)
            {
                deleted = false;
            }
            else
            {
                deleted = await DeleteOneAsync(clients[turn++ % clients.Count], process, key).ConfigureAwait(false);
                if (!deleted)
                {
                    lock (_gate)
                    {
                        _retired.Again(key);
                    }
                }
            }

            if (!deleted)
            {
                try
                {
                    await Task.Delay(50, stop).ConfigureAwait(false);
                }
                catch (OperationCanceledException)
                {
                    return;
                }
            }
        }
    }

    /// <summary>Reads and deletes one retired list in one serializable transaction; true when it committed.</summary>
    private async Task<bool> DeleteOneAsync(HyderClient client, int process, long key)
    {
        bool inDoubt;
        lock (_gate)
        {
            inDoubt = _inDoubt.Contains(key);
        }

        // After a delete of unknown outcome the list may be gone: its read is not recorded.
        if (!inDoubt)
        {
            Recorder.Invoke(process, [Mop.ReadUnknown(key)]);
        }

        HyderTransaction? tx = null;
        long[] list;
        try
        {
            tx = await client.BeginAsync(IsolationLevel.Serializable).ConfigureAwait(false);
            list = ListCodec.Decode(await tx.GetAsync(ListCodec.Key(key)).ConfigureAwait(false));
            await tx.DeleteAsync(ListCodec.Key(key)).ConfigureAwait(false);
        }
        catch (Exception e) when (e is HyderException or InvalidOperationException or OperationCanceledException or HttpRequestException or IOException)
        {
            if (!inDoubt)
            {
                Recorder.Fail(process);
            }

            Interlocked.Increment(ref _deletesNotOk);
            await DisposeQuietlyAsync(tx).ConfigureAwait(false);
            return false;
        }

        try
        {
            await tx.CommitAsync().ConfigureAwait(false);
            lock (_gate)
            {
                if (inDoubt)
                {
                    _unverified.Add(key);
                }
                else
                {
                    _deleted[key] = list;
                }
            }

            if (!inDoubt)
            {
                Recorder.Ok(process, [Mop.Read(key, list)]);
            }

            Interlocked.Increment(ref _deletesOk);
            return true;
        }
        catch (TransactionAbortedException)
        {
            if (!inDoubt)
            {
                Recorder.Fail(process);
            }

            Interlocked.Increment(ref _deletesNotOk);
            return false;
        }
        catch (Exception e) when (e is HyderException or InvalidOperationException or OperationCanceledException or HttpRequestException or IOException)
        {
            if (!inDoubt)
            {
                Recorder.Info(process);
            }

            lock (_gate)
            {
                _inDoubt.Add(key);
            }

            Interlocked.Increment(ref _deletesNotOk);
            return false;
        }
        finally
        {
            await DisposeQuietlyAsync(tx).ConfigureAwait(false);
        }
    }

    /// <summary>One transaction; false when the server did not answer properly (not an abort).</summary>
    private async Task<bool> RunOneAsync(HyderClient client, int process, Mop[] mops)
    {
        Recorder.Invoke(process, mops);
        var completed = new Mop[mops.Length];
        HyderTransaction? tx = null;
        try
        {
            tx = await client.BeginAsync(IsolationLevel.Serializable).ConfigureAwait(false);
            for (var i = 0; i < mops.Length; i++)
            {
                var mop = mops[i];
                var value = await tx.GetAsync(ListCodec.Key(mop.Key)).ConfigureAwait(false);
                if (mop.Kind == MopKind.Append)
                {
                    await tx.PutAsync(ListCodec.Key(mop.Key), ListCodec.Append(value, mop.Value!.Value)).ConfigureAwait(false);
                    completed[i] = mop;
                }
                else
                {
                    completed[i] = Mop.Read(mop.Key, ListCodec.Decode(value));
                }
            }
        }
        catch (Exception e) when (e is HyderException or InvalidOperationException or OperationCanceledException or HttpRequestException or IOException)
        {
            // Commit was never asked for: nothing reached the log.
            Recorder.Fail(process);
            await DisposeQuietlyAsync(tx).ConfigureAwait(false);
            return e is TransactionAbortedException;
        }

        try
        {
            await tx.CommitAsync().ConfigureAwait(false);
            Recorder.Ok(process, completed);
            return true;
        }
        catch (TransactionAbortedException)
        {
            Recorder.Fail(process);
            return true;
        }
        catch (Exception e) when (e is HyderException or InvalidOperationException or OperationCanceledException or HttpRequestException or IOException)
        {
            // The commit may or may not have reached the log.
            Recorder.Info(process);
            return false;
        }
        finally
        {
            await DisposeQuietlyAsync(tx).ConfigureAwait(false);
        }
    }

    private static async Task DisposeQuietlyAsync(HyderTransaction? tx)
    {
        if (tx is null)
        {
            return;
        }

        try
        {
            await tx.DisposeAsync().ConfigureAwait(false);
        }
        catch (Exception e) when (e is HyderException or InvalidOperationException or OperationCanceledException or HttpRequestException or IOException)
        {
            // The stream is gone; the server aborts a transaction whose stream ends.
        }
    }
}
