using Hyder.Benchmarks.Meld;

namespace Hyder.Benchmarks.Server;

/// <summary>
/// `executor [--rounds N] [--ops N] [--churn N]`: the <see cref="ExecutorPathBenchmarks"/> stages timed by the
/// thread's CPU clock instead of the wall clock, so a busy machine (other processes on the two
/// cores) changes the figures little. Prints, per stage, the best round's CPU µs per operation and
/// the bytes the thread allocated per operation.
/// </summary>
internal static class ExecutorStageReport
{
    public static int Run(string[] args)
    {
        var rounds = Option(args, "--rounds", 7);
        var ops = Option(args, "--ops", 20_000);
        var churn = Option(args, "--churn", 50_000, min: 0);
        var b = new ExecutorPathBenchmarks { Reads = 8, Writes = 2, Churn = churn };
        b.Setup();
        Console.WriteLine($"executor stages, {b.Reads} reads + {b.Writes} writes, serializable, 100,000 keys of 1 KiB, {churn:N0} commits after the load; best of {rounds} rounds of {ops:N0} operations on one thread (thread CPU time)");
        Console.WriteLine("| stage | CPU µs / op | bytes allocated / op |");
        Console.WriteLine("|---|--:|--:|");
        foreach (var (name, stage) in new (string, Action)[] { ("execute", () => b.Execute()), ("execute + validate", () => b.ExecuteValidate()), ("execute + validate + encode", () => b.ExecuteValidateEncode()) })
        {
            var best = double.MaxValue;
            var bytes = 0.0;
            for (var r = 0; r < rounds; r++)
            {
                var allocated = GC.GetAllocatedBytesForCurrentThread();
                var start = ThreadClock.Seconds();
                for (var i = 0; i < ops; i++)
                {
                    stage();
                }

                best = Math.Min(best, (ThreadClock.Seconds() - start) * 1e6 / ops);
                bytes = (GC.GetAllocatedBytesForCurrentThread() - allocated) / (double)ops;
            }

            Console.WriteLine($"| {name} | {best:F2} | {bytes:F0} |");
        }

        return 0;
    }

    private static int Option(string[] args, string name, int fallback, int min = 1)
    {
        var at = Array.IndexOf(args, name);
        return at >= 0 && at + 1 < args.Length && int.TryParse(args[at + 1], out var v) && v >= min ? v : fallback;
    }
}
