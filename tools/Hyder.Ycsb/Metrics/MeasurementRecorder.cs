namespace Hyder.Ycsb.Metrics;

/// <summary>
/// One worker's measurements, recorded without allocation and collected by the reporter while the
/// worker runs: the worker writes into the active <see cref="Measurements"/>; <see cref="CollectInto"/>
/// swaps in the spare under a short lock and merges the retired one outside it. A worker's in-flight
/// transactions may complete on different pool threads, so recording takes the same (uncontended
/// in the common case) lock.
/// </summary>
internal sealed class MeasurementRecorder
{
    private readonly Lock _lock = new();
    private readonly Lock _collect = new();
    private Measurements _active = new();
    private Measurements _spare = new();

    public void Record(Series series, long microseconds)
    {
        lock (_lock)
        {
            _active.Record(series, microseconds);
        }
    }

    public void Commit(long transactionMicroseconds)
    {
        lock (_lock)
        {
            _active.CountCommit();
            _active.Record(Series.Transaction, transactionMicroseconds);
        }
    }

    public void Abort(AbortCause cause)
    {
        lock (_lock)
        {
            _active.CountAbort(cause);
        }
    }

    public void GaveUp(long transactionMicroseconds)
    {
        lock (_lock)
        {
            _active.CountGaveUp();
            _active.Record(Series.Transaction, transactionMicroseconds);
        }
    }

    /// <summary>A transaction a bounded Add turned down (out of stock): ended, neither committed nor retried.</summary>
    public void BoundRejected(long transactionMicroseconds)
    {
        lock (_lock)
        {
            _active.CountBoundRejected();
            _active.Record(Series.Transaction, transactionMicroseconds);
        }
    }

    public void Error()
    {
        lock (_lock)
        {
            _active.CountError();
        }
    }

    public void InconsistentRead()
    {
        lock (_lock)
        {
            _active.CountInconsistentRead();
        }
    }

    public void NotFound()
    {
        lock (_lock)
        {
            _active.CountNotFound();
        }
    }

    /// <summary>Adds what was recorded since the last call to <paramref name="target"/> and starts afresh.</summary>
    public void CollectInto(Measurements target)
    {
        lock (_collect)
        {
            Measurements retired;
            lock (_lock)
            {
                retired = _active;
                _active = _spare;
                _spare = retired;
            }

            // Workers now write to the other instance; the retired one is ours until the next swap.
            target.Add(retired);
            retired.Reset();
        }
    }
}
