using BenchmarkDotNet.Running;
using Hyder.Benchmarks.Doppel;
using Hyder.Benchmarks.Meld;
using Hyder.Benchmarks.Pipeline;
using Hyder.Benchmarks.Server;

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

// `doppel [--quick] [--out PATH]` writes docs/benchmarks/doppel.md: N concurrent increments of one
// hot key, as commutative operations and as read-modify-writes (issue 8).
if (args.Length > 0 && args[0] == "doppel")
{
    return DoppelReport.Run(args[1..]);
}

// `server [--quick] [--keys N] [--clients N] [--warmup S] [--seconds S] [--out PATH]` writes
// docs/benchmarks/server.md: one transaction server end to end.
if (args.Length > 0 && args[0] == "server")
{
    return await ServerReport.RunAsync(args[1..]);
}

// `executor [--rounds N] [--ops N] [--churn N]`: an executor's stages (execute, validate, encode) on one
// thread by CPU time, with bytes allocated per operation (docs/benchmarks/server.md).
if (args.Length > 0 && args[0] == "executor")
{
    return Hyder.Benchmarks.Server.ExecutorStageReport.Run(args[1..]);
}

// `tls [--calls N] [--concurrency N] [--payload BYTES] [--rounds N]`: what TLS costs a gRPC call
// (calls/s and CPU per call, h2c vs TLS; docs/security.md, "Cost of TLS").
if (args.Length > 0 && args[0] == "tls")
{
    return await Hyder.Benchmarks.Rpc.TlsCost.RunAsync(args[1..]);
}

// `rpc-floor [--streams N] [--warmup S] [--seconds S] [--rounds N] [--transport tcp|uds|both]`: what
// the official gRPC stack alone costs per interactive transaction, two processes, no database
// (docs/benchmarks/rpc.md, "The transport's floor").
if (args.Length > 0 && args[0] == "rpc-floor")
{
    return await Hyder.Benchmarks.Rpc.TransportFloor.RunAsync(args[1..]);
}

BenchmarkSwitcher.FromAssembly(typeof(MeldReport).Assembly).Run(args);
return 0;
