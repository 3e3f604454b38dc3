using BenchmarkDotNet.Running;
using Hyder.Benchmarks.Meld;
using Hyder.Benchmarks.Pipeline;

// `report [--quick] [--filter TEXT] [--out PATH]` writes docs/benchmarks/meld.md (see that file);
// anything else goes to BenchmarkDotNet, e.g. `--filter '*MeldBenchmarks*'`.
if (args.Length > 0 && args[0] == "report")
{
    return MeldReport.Run(args[1..]);
}

// `pipeline [--quick] [--out PATH]` writes docs/benchmarks/pipeline.md.
if (args.Length > 0 && args[0] == "pipeline")
{
    return PipelineReport.Run(args[1..]);
}

BenchmarkSwitcher.FromAssembly(typeof(MeldReport).Assembly).Run(args);
return 0;
