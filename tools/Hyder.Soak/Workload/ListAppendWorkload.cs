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
public sealed class ListAppendWorkload
{
    private readonly TxnGenerator _generator;
    private readonly Lock _gate = new();

    /// <summary>Creates the workload.</summary>
    /// <param name="recorder">Where the history goes.</param>
    /// <param name="seed">The generator's seed.</param>
    /// <param name="activeKeys">Lists in use at a time.</param>
    public ListAppendWorkload(HistoryRecorder recorder, int seed, int activeKeys = 8)
    {
        Recorder = recorder;
        _generator = new TxnGenerator(new WorkloadOptions { Lists = true, Registers = false, ActiveKeys = activeKeys, MaxWritesPerKey = 32, MinOps = 1, MaxOps = 4 }, seed);
    }

    /// <summary>The history.</summary>
    public HistoryRecorder Recorder { get; }

    /// <summary>Runs <paramref name="processes"/> client tasks, process p on <paramref name="clients"/>[p mod n], until <paramref name="stop"/>.</summary>
    /// <param name="clients">One client per server.</param>
    /// <param name="processes">Client tasks.</param>
    /// <param name="firstProcess">The first task's process number in the history.</param>
    /// <param name="stop">Ends the run; a transaction in flight then completes or is recorded as unknown.</param>
    public Task RunAsync(IReadOnlyList<HyderClient> clients, int processes, int firstProcess, CancellationToken stop) =>
        Task.WhenAll(Enumerable.Range(0, processes).Select(p => Task.Run(() => RunProcessAsync(clients[p % clients.Count], firstProcess + p, stop), CancellationToken.None)));

    private async Task RunProcessAsync(HyderClient client, int process, CancellationToken stop)
    {
        while (!stop.IsCancellationRequested)
        {
            Mop[] mops;
            lock (_gate)
            {
                mops = _generator.Next();
            }

            if (!await RunOneAsync(client, process, mops).ConfigureAwait(false))
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
