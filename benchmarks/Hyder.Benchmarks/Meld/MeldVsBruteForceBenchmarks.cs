using BenchmarkDotNet.Attributes;
using Hyder.Tree.Memory;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// Meld against the brute-force validator on the same intentions (meld paper App. F, Figure 14):
/// rw is the symmetric case, ri the asymmetric one, at concurrency degree 16, streaming and
/// cache-resident (a cache-resident log of 64 intentions is melded 64 times per invocation, so
/// every invocation is 4,096 operations).
/// </summary>
[Config(typeof(MeldBenchmarkConfig))]
public class MeldVsBruteForceBenchmarks
{
    private MeldLog _log = null!;
    private MeldOperator _op = null!;
    private int _times;
    private BruteForceValidator _validator = null!;

    /// <summary>The rw and ri configurations at degree 16, streaming and cache-resident (the report has every degree).</summary>
    public static IEnumerable<MeldWorkload> Workloads =>
        MeldSuites.Symmetric(MeldSuites.FullCount).Concat(MeldSuites.Asymmetric(MeldSuites.FullCount)).Concat(MeldSuites.CacheResident())
            .Where(w => w.Degree == 16);

    /// <summary>The configuration being measured.</summary>
    [ParamsSource(nameof(Workloads))]
    public MeldWorkload Workload { get; set; } = null!;

    [GlobalSetup]
    public void Setup()
    {
        _log = MeldLogBuilder.Build(Workload);
        _times = MeldSuites.FullCount / _log.Count;
        _op = new MeldOperator(threadId: 1, new NodePool(1 << 16));
        _validator = new BruteForceValidator();
        MeldCounts.Collect(_log, _op, _validator);
    }

    [GlobalCleanup]
    public void Cleanup() => _log = null!;

    [Benchmark(Baseline = true, OperationsPerInvoke = MeldSuites.FullCount)]
    public int Meld() => MeldPasses.Meld(_log, _op, _times);

    [Benchmark(OperationsPerInvoke = MeldSuites.FullCount)]
    public int BruteForce() => MeldPasses.BruteForce(_log, _validator, _times);
}
