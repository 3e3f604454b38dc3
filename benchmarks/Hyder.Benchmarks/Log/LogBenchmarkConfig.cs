using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Jobs;

namespace Hyder.Benchmarks.Log;

/// <summary>
/// The log suites' configuration: allocations per operation (memory diagnoser), operations per
/// second, workstation non-concurrent GC so allocation counts are stable, and a short job (the
/// machine has 2 cores; the figures are ratios and allocations, not absolute truth).
/// </summary>
public sealed class LogBenchmarkConfig : ManualConfig
{
    public LogBenchmarkConfig()
    {
        AddJob(Job.Default
            .WithWarmupCount(3)
            .WithIterationCount(8)
            .WithGcServer(false)
            .WithGcConcurrent(false));
        AddDiagnoser(MemoryDiagnoser.Default);
        AddColumn(StatisticColumn.OperationsPerSecond);
    }
}
