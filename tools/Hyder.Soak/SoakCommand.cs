using System.CommandLine;
using System.Diagnostics;
using System.Globalization;
using System.Text;
using Hyder.Client;
using Hyder.Soak.Cluster;
using Hyder.Soak.Workload;

namespace Hyder.Soak;

/// <summary>The soak options, checked.</summary>
internal sealed record SoakOptions
{
    public double Minutes { get; init; } = 60;

    public int SampleSeconds { get; init; } = 10;

    public int FaultEverySeconds { get; init; } = 30;

    public int Units { get; init; } = 2;

    public int Servers { get; init; } = 3;

    public int Clients { get; init; } = 8;

    public int Seed { get; init; }

    public required string Out { get; init; }

    public string? Directory { get; init; }
}

/// <summary>
/// hyder-soak: a local cluster of real processes under mixed load for a long time, with periodic
/// kills, sampling every process's memory; at the end the cluster is verified like a kill loop
/// and the survivors' memory is judged flat or not (docs/reliability.md, "Soak").
/// </summary>
internal static class SoakCommand
{
    /// <summary>Largest growth of the survivors' resident set, last quartile over first, still called flat.</summary>
    public const double FlatGrowth = 0.10;

    private static readonly Option<double> s_minutes = new("--minutes") { Description = "How long the load runs (default 60; 2 for a smoke test).", DefaultValueFactory = _ => 60 };
    private static readonly Option<int> s_sample = new("--sample-seconds") { Description = "Seconds between memory samples (default 10).", DefaultValueFactory = _ => 10 };
    private static readonly Option<int> s_faults = new("--fault-every-seconds") { Description = "Mean seconds between kills (SIGKILL, restart after up to 2 s) of a victim; 0: no faults (default 30).", DefaultValueFactory = _ => 30 };
    private static readonly Option<int> s_units = new("--units") { Description = "Log units, in chains of two (default 2).", DefaultValueFactory = _ => 2 };
    private static readonly Option<int> s_servers = new("--servers") { Description = "Transaction servers (default 3).", DefaultValueFactory = _ => 3 };
    private static readonly Option<int> s_clients = new("--clients") { Description = "Client tasks: half list-append (checked), half YCSB-style 4 reads + 1 update (default 8).", DefaultValueFactory = _ => 8 };
    private static readonly Option<int?> s_seed = new("--seed") { Description = "Seed of the workload and the faults (default: random, printed)." };
    private static readonly Option<string> s_out = new("--out") { Description = "Where samples.csv and summary.md go (default ./soak-results).", DefaultValueFactory = _ => "soak-results" };
    private static readonly Option<string?> s_dir = new("--dir") { Description = "The cluster's directory (data and process logs); default a temporary one, removed after a passing run." };

    public static Task<int> RunAsync(string[] args)
    {
        var root = new RootCommand("hyder-soak: a local cluster of real processes under mixed load with periodic kills; samples memory and gen-2 collections, verifies the cluster at the end.")
        {
            s_minutes, s_sample, s_faults, s_units, s_servers, s_clients, s_seed, s_out, s_dir,
        };
        root.SetAction((parse, token) =>
        {
            SoakOptions options;
            try
            {
                options = Read(parse);
            }
            catch (ArgumentException e)
            {
                Console.Error.WriteLine($"hyder-soak: {e.Message}");
                return Task.FromResult(2);
            }

            return SoakAsync(options, token);
        });
        return root.Parse(args).InvokeAsync();
    }

    internal static SoakOptions Read(ParseResult parse)
    {
        var minutes = parse.GetValue(s_minutes);
        if (!(minutes > 0))
        {
            throw new ArgumentException($"--minutes {minutes.ToString(CultureInfo.InvariantCulture)} must be above 0.");
        }

        static int AtLeast(string name, int value, int least) =>
            value >= least ? value : throw new ArgumentException($"{name} {value} is below the least allowed, {least}.");

        var units = AtLeast("--units", parse.GetValue(s_units), 2);
        if (units % 2 != 0)
        {
            throw new ArgumentException($"--units {units}: units come in chains of two.");
        }

        return new SoakOptions
        {
            Minutes = minutes,
            SampleSeconds = AtLeast("--sample-seconds", parse.GetValue(s_sample), 1),
            FaultEverySeconds = AtLeast("--fault-every-seconds", parse.GetValue(s_faults), 0),
            Units = units,
            Servers = AtLeast("--servers", parse.GetValue(s_servers), 2),
            Clients = AtLeast("--clients", parse.GetValue(s_clients), 2),
            Seed = parse.GetValue(s_seed) ?? Random.Shared.Next(),
            Out = parse.GetValue(s_out)!,
            Directory = parse.GetValue(s_dir),
        };
    }

    private static async Task<int> SoakAsync(SoakOptions o, CancellationToken cancellationToken)
    {
        var directory = o.Directory ?? Path.Combine(Path.GetTempPath(), "hyder-soak-" + Guid.NewGuid().ToString("N")[..8]);
        System.IO.Directory.CreateDirectory(o.Out);
        var started = DateTime.UtcNow;
        var loadBefore = LoadAverage();
        Console.WriteLine($"hyder-soak: {o.Minutes} min, {o.Units} units, {o.Servers} servers, {o.Clients} clients, {(o.FaultEverySeconds > 0 ? $"a kill every ~{o.FaultEverySeconds} s" : "no faults")}, seed {o.Seed}; cluster in {directory}");
        var cluster = LocalCluster.Create(new LocalClusterOptions
        {
            Directory = directory,
            Units = o.Units,
            Replicas = 2,
            Servers = o.Servers,
            Hosts = HostBinaries.FromRepository(),
            ServerArguments = ["--checkpoint-every", "5000"],
        });
        var clients = new List<HyderClient>();
        var passed = false;
        try
        {
            await cluster.StartAsync(cancellationToken).ConfigureAwait(false);
            clients.AddRange(cluster.Servers.Select(p => new HyderClient(new HyderClientSettings { Endpoint = new Uri(p.Endpoint), Timeout = TimeSpan.FromSeconds(10) })));

            // Survivors run the whole soak, so their memory tells; the victims restart now and then.
            ClusterProcess[] victims = [.. cluster.Units.Skip(1), .. cluster.Servers.Skip(1)];
            var survivors = cluster.All.Except(victims).ToArray();
            Console.WriteLine($"victims: {string.Join(", ", victims.Select(v => v.Name))}; judged for memory: {string.Join(", ", survivors.Select(v => v.Name))}");

            var recorder = new HistoryRecorder();
            var ycsb = new YcsbCounters();
            using var stop = CancellationTokenSource.CreateLinkedTokenSource(cancellationToken);
            var listClients = o.Clients / 2;
            var load = Task.WhenAll(
                new ListAppendWorkload(recorder, o.Seed).RunAsync(clients, listClients, firstProcess: 0, stop.Token),
                ycsb.RunAsync(clients, o.Clients - listClients, o.Seed, stop.Token));
            var loop = o.FaultEverySeconds == 0 ? null : new KillLoop(victims, new KillLoopOptions
            {
                Seed = o.Seed,
                MinInterval = TimeSpan.FromSeconds(o.FaultEverySeconds / 2.0),
                MaxInterval = TimeSpan.FromSeconds(o.FaultEverySeconds * 1.5),
            }, line => Console.WriteLine("[FAULT] " + line));
            var faults = loop?.RunAsync(stop.Token) ?? Task.CompletedTask;

            var samples = new List<Sample>();
            var csvPath = Path.Combine(o.Out, "samples.csv");
            await using (var csv = new StreamWriter(csvPath))
            {
                await csv.WriteLineAsync("elapsed_s,process,pid,starts,rss_bytes,gen2_collections,managed_heap_bytes,committed").ConfigureAwait(false);
                var clock = Stopwatch.StartNew();
                var end = TimeSpan.FromMinutes(o.Minutes);
                while (clock.Elapsed < end && !cancellationToken.IsCancellationRequested)
                {
                    var batch = await SampleAsync(cluster, clients, clock.Elapsed).ConfigureAwait(false);
                    samples.AddRange(batch);
                    foreach (var s in batch)
                    {
                        await csv.WriteLineAsync(string.Create(CultureInfo.InvariantCulture, $"{s.Elapsed.TotalSeconds:F0},{s.Process},{s.Pid},{s.Starts},{s.Rss},{s.Gen2},{s.Heap},{s.Committed}")).ConfigureAwait(false);
                    }

                    await csv.FlushAsync(cancellationToken).ConfigureAwait(false);
                    var counts = recorder.Counts;
                    Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"[SAMPLE] {clock.Elapsed.TotalMinutes:F1} min: list-append ok {counts.Ok} fail {counts.Failed} unknown {counts.Unknown}; ycsb ok {ycsb.Ok} not {ycsb.NotOk}; kills {loop?.Kills.Count ?? 0}; RSS MiB {string.Join(' ', batch.Select(b => $"{b.Process}={b.Rss / 1048576.0:F0}"))}"));
                    try
                    {
                        await Task.Delay(TimeSpan.FromSeconds(o.SampleSeconds), cancellationToken).ConfigureAwait(false);
                    }
                    catch (OperationCanceledException)
                    {
                        break;
                    }
                }

                await stop.CancelAsync().ConfigureAwait(false);
                await load.ConfigureAwait(false);
                await faults.ConfigureAwait(false);
            }

            await cluster.StartStoppedAsync(CancellationToken.None).ConfigureAwait(false);
            Verification verification;
            try
            {
                verification = await Verifier.VerifyAsync(clients, recorder, firstProcess: 100_000, TimeSpan.FromMinutes(5), CancellationToken.None).ConfigureAwait(false);
            }
            catch (Exception e) when (e is HyderException or OperationCanceledException or HttpRequestException)
            {
                Console.Error.WriteLine($"hyder-soak: the verification could not finish: {e}");
                return 1;
            }

            var judgements = survivors.Select(p => Judge(p.Name, samples.Where(s => s.Process == p.Name).ToArray())).ToArray();
            var flat = judgements.All(j => j.Flat);
            passed = verification.Passed;
            var summary = Summary(o, started, loadBefore, LoadAverage(), recorder.Counts, ycsb, loop?.Kills ?? [], verification, judgements);
            await File.WriteAllTextAsync(Path.Combine(o.Out, "summary.md"), summary, CancellationToken.None).ConfigureAwait(false);
            Console.WriteLine(summary);
            Console.WriteLine($"samples: {Path.GetFullPath(csvPath)}; summary: {Path.GetFullPath(Path.Combine(o.Out, "summary.md"))}");
            return !passed ? 1 : flat ? 0 : 3;
        }
        finally
        {
            foreach (var client in clients)
            {
                await client.DisposeAsync().ConfigureAwait(false);
            }

            await cluster.DisposeAsync().ConfigureAwait(false);
            if (o.Directory is null && passed)
            {
                System.IO.Directory.Delete(directory, recursive: true);
            }
            else
            {
                Console.WriteLine($"cluster directory kept: {directory}");
            }
        }
    }

    private static async Task<List<Sample>> SampleAsync(LocalCluster cluster, IReadOnlyList<HyderClient> clients, TimeSpan elapsed)
    {
        var batch = new List<Sample>();
        foreach (var process in cluster.All)
        {
            long? gen2 = null, heap = null, committed = null;
            var index = cluster.Servers.ToList().IndexOf(process);
            if (index >= 0 && process.IsRunning)
            {
                try
                {
                    using var timeout = new CancellationTokenSource(TimeSpan.FromSeconds(3));
                    var status = await clients[index].GetStatusAsync(timeout.Token).ConfigureAwait(false);
                    (gen2, heap, committed) = (status.Gen2Collections, status.ManagedHeapBytes, status.Committed);
                }
                catch (Exception e) when (e is HyderException or OperationCanceledException or HttpRequestException)
                {
                    // Restarting: no figures this round.
                }
            }

            batch.Add(new Sample(elapsed, process.Name, process.Pid ?? 0, process.Starts, process.ResidentBytes() ?? 0, gen2, heap, committed));
        }

        return batch;
    }

    /// <summary>
    /// The rule: drop the first 10 % of the samples (warm-up), split the rest into quartiles, and
    /// compare the mean resident set of the last quartile with the first; flat when it grew by at
    /// most <see cref="FlatGrowth"/>. The slope (least squares over the same samples) and the
    /// managed heap and gen-2 rate are reported beside it.
    /// </summary>
    internal static Judgement Judge(string name, Sample[] samples)
    {
        var kept = samples.Where(s => s.Rss > 0).Skip(samples.Length / 10).ToArray();
        if (kept.Length < 4)
        {
            return new Judgement(name, 0, 0, 0, double.NaN, null, null, null, Flat: true, "too few samples to judge");
        }

        var quarter = kept.Length / 4;
        var first = kept.Take(quarter).ToArray();
        var last = kept.Skip(kept.Length - quarter).ToArray();
        double Mean(IEnumerable<double> xs) => xs.Average();
        var q1 = Mean(first.Select(s => (double)s.Rss));
        var q4 = Mean(last.Select(s => (double)s.Rss));
        var growth = (q4 - q1) / q1;
        var xsHours = kept.Select(s => s.Elapsed.TotalHours).ToArray();
        var ys = kept.Select(s => s.Rss / 1048576.0).ToArray();
        var mx = xsHours.Average();
        var my = ys.Average();
        var denominator = xsHours.Sum(x => (x - mx) * (x - mx));
        var slope = denominator == 0 ? 0 : xsHours.Zip(ys).Sum(p => (p.First - mx) * (p.Second - my)) / denominator;
        double? heapQ1 = first.All(s => s.Heap is not null) ? Mean(first.Select(s => (double)s.Heap!.Value)) : null;
        double? heapQ4 = last.All(s => s.Heap is not null) ? Mean(last.Select(s => (double)s.Heap!.Value)) : null;
        double? gen2PerMinute = kept[^1].Gen2 is { } g2 && kept[0].Gen2 is { } g1 && kept[^1].Elapsed > kept[0].Elapsed
            ? (g2 - g1) / (kept[^1].Elapsed - kept[0].Elapsed).TotalMinutes
            : null;
        var flat = growth <= FlatGrowth;
        return new Judgement(name, q1, q4, growth, slope, heapQ1, heapQ4, gen2PerMinute, flat, flat ? "flat" : "GROWING");
    }

    private static string Summary(SoakOptions o, DateTime started, string loadBefore, string loadAfter, OutcomeCounts lists, YcsbCounters ycsb, IReadOnlyList<KillRecord> kills, Verification verification, Judgement[] judgements)
    {
        var text = new StringBuilder();
        var inv = CultureInfo.InvariantCulture;
        text.AppendLine(inv, $"# Soak {started:yyyy-MM-dd HH:mm} UTC");
        text.AppendLine();
        text.AppendLine(inv, $"- command: `hyder-soak --minutes {o.Minutes} --units {o.Units} --servers {o.Servers} --clients {o.Clients} --fault-every-seconds {o.FaultEverySeconds} --sample-seconds {o.SampleSeconds} --seed {o.Seed}`");
        text.AppendLine(inv, $"- machine: {Environment.ProcessorCount} cores, {Environment.OSVersion}, .NET {Environment.Version}; load average before {loadBefore}, after {loadAfter}");
        text.AppendLine(inv, $"- ran {(DateTime.UtcNow - started).TotalMinutes:F1} min (with start and verification)");
        text.AppendLine(inv, $"- list-append transactions: ok (acknowledged) {lists.Ok}, failed {lists.Failed}, unknown {lists.Unknown}; YCSB-style transactions ok {ycsb.Ok}, not ok {ycsb.NotOk}");
        text.AppendLine(kills.Count == 0
            ? "- kills: none"
            : string.Create(inv, $"- kills: {kills.Count} ({string.Join(", ", kills.GroupBy(k => k.Victim).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => $"{g.Key} {g.Count()}"))}), every one restarted"));
        text.AppendLine(inv, $"- verification: {(verification.Passed ? "PASSED" : "FAILED")}: {(verification.Converged ? "every server at ordinal " + verification.Ordinal + " with the same hash" : "servers DIVERGED")}; acknowledged appends {verification.Acknowledged}, lost {verification.Lost.Count}; checker {(verification.Check.Valid ? "valid" : "INVALID")} for serializable ({verification.Check.Stats.Transactions} transactions)");
        text.AppendLine();
        text.AppendLine(inv, $"Memory of the processes never killed (rule: drop the first 10 % of samples, flat when the last quartile's mean resident set is at most {FlatGrowth:P0} above the first quartile's):");
        text.AppendLine();
        text.AppendLine("| process | RSS Q1 MiB | RSS Q4 MiB | growth | slope MiB/h | heap Q1 MiB | heap Q4 MiB | gen-2/min | verdict |");
        text.AppendLine("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        foreach (var j in judgements)
        {
            static string MiB(double? bytes) => bytes is { } b ? (b / 1048576.0).ToString("F1", CultureInfo.InvariantCulture) : "-";
            text.AppendLine(inv, $"| {j.Process} | {MiB(j.RssQ1)} | {MiB(j.RssQ4)} | {j.Growth:P1} | {j.SlopeMiBPerHour:F1} | {MiB(j.HeapQ1)} | {MiB(j.HeapQ4)} | {(j.Gen2PerMinute is { } g ? g.ToString("F2", CultureInfo.InvariantCulture) : "-")} | {j.Verdict} |");
        }

        if (!verification.Passed)
        {
            text.AppendLine();
            text.AppendLine("```");
            text.AppendLine(verification.ToString());
            text.AppendLine("```");
        }

        return text.ToString();
    }

    private static string LoadAverage()
    {
        try
        {
            return string.Join(' ', File.ReadAllText("/proc/loadavg").Split(' ').Take(3));
        }
        catch (IOException)
        {
            return "unknown";
        }
    }
}

/// <summary>One process's figures at one moment; server-only figures are null for log hosts or when the server did not answer.</summary>
internal sealed record Sample(TimeSpan Elapsed, string Process, int Pid, int Starts, long Rss, long? Gen2, long? Heap, long? Committed);

/// <summary>The memory verdict on one process.</summary>
internal sealed record Judgement(string Process, double RssQ1, double RssQ4, double Growth, double SlopeMiBPerHour, double? HeapQ1, double? HeapQ4, double? Gen2PerMinute, bool Flat, string Verdict);
