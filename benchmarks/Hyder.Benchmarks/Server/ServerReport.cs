using System.Diagnostics;
using System.Globalization;
using Hyder.Benchmarks.Meld;
using Hyder.Server.Cluster;
using Hyder.Tree;
using Hyder.Tree.Pipeline;

namespace Hyder.Benchmarks.Server;

/// <summary>
/// The <c>server</c> command: Hyder II §6.4.1 and §6.4.4 end to end on one machine. One
/// transaction server on an in-memory embedded log runs the paper's workload (8 reads + 2 writes,
/// uniform keys, 4-byte keys, 1 KiB payloads) under five configurations side by side: final meld
/// only, group meld, premeld, premeld + group meld, and snapshot isolation.
/// </summary>
public static class ServerReport
{
    private static readonly CultureInfo s_inv = CultureInfo.InvariantCulture;

    /// <summary>
    /// Runs the report. <c>--quick</c> for a smoke run to the temp folder; <c>--keys N</c>,
    /// <c>--clients N</c>, <c>--seconds N</c>, <c>--warmup N</c>, <c>--out PATH</c> to change the defaults.
    /// </summary>
    public static async Task<int> RunAsync(string[] args)
    {
        if (args.Contains("--help") || args.Contains("-h"))
        {
            Console.WriteLine(Usage);
            return 0;
        }

        if (ReportArguments.Unknown(args, flags: ["--quick"], options: ["--keys", "--clients", "--warmup", "--seconds", "--out"]) is { } unknown)
        {
            Console.Error.WriteLine($"server: {unknown}\n{Usage}");
            return 2;
        }

        var quick = args.Contains("--quick");
        var w = new ServerWorkload(
            Keys: IntOption(args, "--keys") ?? (quick ? 50_000 : 1_000_000),
            PayloadBytes: 1024,
            Reads: 8,
            Writes: 2,
            Clients: IntOption(args, "--clients") ?? 128,
            LoadBatch: 128,
            Warmup: TimeSpan.FromSeconds(IntOption(args, "--warmup") ?? (quick ? 3 : 10)),
            Duration: TimeSpan.FromSeconds(IntOption(args, "--seconds") ?? (quick ? 6 : 30)));

        // Premeld t = 2, d = 2: the paper ran t = 5, d = 10 on 16 cores; here 2 cores carry every
        // thread, and pipeline.md shows a short distance leaves final meld the least work.
        var configs = new List<ServerConfig>
        {
            new("final meld only", new ClusterSettings(), IsolationLevel.Serializable),
            new("group meld", new ClusterSettings { GroupMeld = true }, IsolationLevel.Serializable),
            new("premeld t=2 d=2", new ClusterSettings { PremeldThreads = 2, Distance = 2 }, IsolationLevel.Serializable),
            new("premeld t=2 d=2 + group meld", new ClusterSettings { PremeldThreads = 2, Distance = 2, GroupMeld = true }, IsolationLevel.Serializable),
            new("snapshot isolation, final meld only", new ClusterSettings(), IsolationLevel.SnapshotIsolation),

            // A diagnostic: final meld only as above, but its thread spins, then yields, unpinned —
            // the policy the other serializable rows resolve to on 2 cores.
            new("final meld only, spin then yield", new ClusterSettings(), IsolationLevel.Serializable, new PipelineThreading { Spin = SpinPolicy.SpinThenYield, PinToCores = false }),
        };

        var machine = MachineInfo.Capture();
        Console.WriteLine(string.Create(s_inv, $"server report: {configs.Count} configurations, {w.Keys:N0} keys, {w.Clients} clients, {w.Warmup.TotalSeconds:F0} s warm-up + {w.Duration.TotalSeconds:F0} s each; load {MachineInfo.LoadAverage()}"));
        var encode = SerializationCost.Measure(w);
        var rows = new List<ServerResult>();
        var clock = Stopwatch.StartNew();
        foreach (var config in configs)
        {
            var r = await ServerRun.MeasureAsync(config, w);
            rows.Add(r);
            Console.WriteLine(string.Create(s_inv, $"  {r.Config.Name,-36} {r.CommittedPerSecond,8:N0} committed/s  aborts {r.AbortRate,6:P1}  final {r.FinalNodesPerCommit,6:F1} nodes/commit  premeld {r.PremeldNodesPerTxn,6:F1}  zone {r.TransactionZone,6:F0}/{r.FinalZone,5:F1}  {r.BytesPerTxn,8:N0} B/txn  cpu {r.CpuPerWall:F2}  ({clock.Elapsed:mm\\:ss})"));

            // Each configuration starts from nothing: the previous log and tree are garbage.
            GC.Collect(2, GCCollectionMode.Forced, blocking: true, compacting: true);
            GC.WaitForPendingFinalizers();
        }

        var path = ReportArguments.Option(args, "--out") ?? (quick ? Path.Combine(Path.GetTempPath(), "server-quick.md") : Path.Combine(ReportArguments.RepositoryRoot(), "docs", "benchmarks", "server-report.md"));
        var command = "dotnet run -c Release --project benchmarks/Hyder.Benchmarks -- server" + (args.Length > 0 ? " " + string.Join(' ', args) : string.Empty);
        File.WriteAllText(path, ServerReportWriter.Write(rows, machine, w, encode, command, clock.Elapsed));
        Console.WriteLine($"wrote {path}");
        return 0;
    }


    private const string Usage = """
        Usage: dotnet run -c Release --project benchmarks/Hyder.Benchmarks -- server [options]

        One transaction server end to end, six pipeline configurations, about 5 minutes on 2 cores.
        Writes docs/benchmarks/server-report.md (generated; the measured sittings are in server.md).

          --quick          a smoke run: 50,000 keys, 3 s warm-up and 6 s per configuration, to the temp folder
          --keys N         keys loaded (default 1,000,000)
          --clients N      concurrent clients (default 128)
          --warmup S       seconds before measuring each configuration (default 10)
          --seconds S      seconds measured per configuration (default 30)
          --out PATH       where the report goes
        """;

    private static int? IntOption(string[] args, string name) =>
        ReportArguments.Option(args, name) is { } s ? int.Parse(s, s_inv) : null;
}
