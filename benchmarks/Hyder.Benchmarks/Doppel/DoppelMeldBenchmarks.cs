using BenchmarkDotNet.Attributes;
using Hyder.Tree;

namespace Hyder.Benchmarks.Doppel;

/// <summary>
/// Final meld alone on Doppel's INCR1 at 100 % hot share (issue 8): a batch of concurrent
/// increments of one counter on one snapshot, melded in log order, with the counter split
/// (side table), as operations, and as read-modify-writes (the module off). Time and bytes per
/// melded intention; <c>doppel</c> (DoppelReport) counts the nodes.
/// </summary>
[MemoryDiagnoser]
[InvocationCount(1)]
public class DoppelMeldBenchmarks
{
    private const int Keys = 131_072;
    private const int Batch = 256;
    private Database _db = null!;
    private List<Intention> _batch = null!;

    /// <summary>How the increments run.</summary>
    [Params(DoppelReport.Mode.SplitPhases, DoppelReport.Mode.Operations, DoppelReport.Mode.ReadModifyWriteSerializable)]
    public DoppelReport.Mode Setting { get; set; }

    [IterationSetup]
    public void Setup()
    {
        (_db, var hot) = DoppelReport.Load(Keys, Setting);
        var snapshot = _db.PinCurrent();
        _batch = new List<Intention>(Batch);
        for (var i = 0; i < Batch; i++)
        {
            using var tx = DoppelReport.Increment(_db, snapshot, Setting, hot);
            var intention = tx.Complete()!;
            _db.Append(intention);
            _batch.Add(intention);
        }

        _db.Release(snapshot);
    }

    /// <summary>Melds the batch: per intention (OperationsPerInvoke).</summary>
    [Benchmark(OperationsPerInvoke = Batch)]
    public int MeldBatch()
    {
        var commits = 0;
        foreach (var intention in _batch)
        {
            commits += _db.Meld(intention).Committed ? 1 : 0;
        }

        return commits;
    }
}
