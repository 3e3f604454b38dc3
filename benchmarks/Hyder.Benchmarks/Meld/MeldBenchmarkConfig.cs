using BenchmarkDotNet.Columns;
using BenchmarkDotNet.Configs;
using BenchmarkDotNet.Diagnosers;
using BenchmarkDotNet.Jobs;
using BenchmarkDotNet.Loggers;
using BenchmarkDotNet.Reports;
using BenchmarkDotNet.Toolchains.InProcess.Emit;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// The meld suites' BenchmarkDotNet config: allocations per operation, operations per second,
/// workstation non-concurrent GC (set in the csproj; in-process runs inherit it), and a short job
/// so the whole suite (124 benchmarks) takes about 12 minutes on two cores.
/// </summary>
/// <remarks>
/// In-process: the generated out-of-process project would rebuild the solution under the
/// repository's analyzers for every run, which costs minutes on this machine.
/// </remarks>
public sealed class MeldBenchmarkConfig : ManualConfig
{
    /// <summary>Creates the config.</summary>
    public MeldBenchmarkConfig()
    {
        AddJob(Job.Default
            .WithToolchain(InProcessEmitToolchain.Instance)
            .WithLaunchCount(1)
            .WithWarmupCount(1)
            .WithIterationCount(4)
            .WithIterationTime(Perfolizer.Horology.TimeInterval.FromMilliseconds(200))
            .WithGcServer(false)
            .WithGcConcurrent(false)
            .WithId("meld"));
        AddDiagnoser(MemoryDiagnoser.Default);
        AddColumnProvider(DefaultColumnProviders.Instance);
        AddColumn(StatisticColumn.OperationsPerSecond);
        AddLogger(ConsoleLogger.Default);
        WithOptions(ConfigOptions.JoinSummary);

        // Workload names run to 30 characters; the default column cuts them at 20.
        WithSummaryStyle(SummaryStyle.Default.WithMaxParameterColumnWidth(40));
    }
}
