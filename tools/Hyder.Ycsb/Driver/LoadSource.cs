using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Driver;

/// <summary>
/// The load phase's transactions: every key space's initial records, inserted in batches of
/// consecutive key numbers, one batch per transaction. Shared by all workers (a batch cursor).
/// </summary>
internal sealed class LoadSource : ITransactionSource
{
    private readonly (int Space, long Records)[] _spaces;
    private readonly int _batch;
    private long _nextBatch;

    public LoadSource(IReadOnlyList<KeySpace> spaces, int batch)
    {
        if (batch < 1)
        {
            throw new ArgumentOutOfRangeException(nameof(batch), batch, "A load batch holds at least one record.");
        }

        _spaces = spaces.Select(s => (s.Id, s.InitialRecords)).ToArray();
        _batch = batch;
        TotalRecords = _spaces.Sum(s => s.Records);
    }

    public long TotalRecords { get; }

    public bool TryNext(TransactionPlan plan)
    {
        plan.Clear();
        plan.Isolation = IsolationLevel.ReadCommitted;
        var batch = Interlocked.Increment(ref _nextBatch) - 1;
        foreach (var (space, records) in _spaces)
        {
            var batches = (records + _batch - 1) / _batch;
            if (batch < batches)
            {
                var end = Math.Min(records, (batch + 1) * _batch);
                for (var key = batch * _batch; key < end; key++)
                {
                    plan.Operations.Add(new Operation(OperationKind.Insert, space, key));
                }

                return true;
            }

            batch -= batches;
        }

        return false;
    }
}
