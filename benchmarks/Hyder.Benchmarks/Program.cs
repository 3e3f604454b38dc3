using BenchmarkDotNet.Running;

// Every suite in this assembly: `dotnet run -c Release --project benchmarks/Hyder.Benchmarks -- --filter '*Meld*'`.
BenchmarkSwitcher.FromAssembly(typeof(Program).Assembly).Run(args);
