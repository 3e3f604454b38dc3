using BenchmarkDotNet.Attributes;
using Hyder.Tree.Memory;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// Meld throughput on one thread over pre-generated logs (meld paper §8, App. F): only
/// <see cref="MeldOperator.Trial"/> is timed, one operation per meld.
/// </summary>
[Config(typeof(MeldBenchmarkConfig))]
public class MeldBenchmarks
{
    private MeldLog _log = null!;
    private MeldOperator _op = null!;
    private int _times;

    /// <summary>Every configuration of the paper's experiments (the cache-resident ones are in <see cref="MeldVsBruteForceBenchmarks"/>).</summary>
    public static IEnumerable<MeldWorkload> Workloads => MeldSuites.All(MeldSuites.FullCount).Where(w => !w.CacheResident);

    /// <summary>The configuration being measured.</summary>
    [ParamsSource(nameof(Workloads))]
    public MeldWorkload Workload { get; set; } = null!;

    [GlobalSetup]
    public void Setup()
    {
        _log = MeldLogBuilder.Build(Workload);
        _times = MeldSuites.FullCount / _log.Count;
        _op = new MeldOperator(threadId: 1, new NodePool(1 << 16));
        MeldCounts.Collect(_log, _op, new BruteForceValidator());
    }

    [GlobalCleanup]
    public void Cleanup() => _log = null!;

    [Benchmark(OperationsPerInvoke = MeldSuites.FullCount)]
    public int Meld() => MeldPasses.Meld(_log, _op, _times);
}
