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

    /// <summary>Keep retired lists (the data set grows with the run) instead of deleting them.</summary>
    public bool GrowingData { get; init; }

    public int CheckpointEvery { get; init; } = 5000;

    public int TrimKeepCheckpoints { get; init; } = 4;

    public int TrimMargin { get; init; } = 20_000;

    public int SlotsPerSegment { get; init; } = 1024;
}

/// <summary>
/// hyder-soak: a local cluster of real processes under mixed load for a long time, with periodic
/// kills, sampling every process's memory; at the end the cluster is verified like a kill loop
/// and the survivors' memory is judged flat or not (docs/reliability.md, "Soak").
/// </summary>
internal static class SoakCommand
{
    /// <summary>Largest change, up or down, of a judged figure (resident set, disk), last quartile's mean over the first's, still called bounded.</summary>
    public const double BoundedChange = 0.10;

    private static readonly Option<double> s_minutes = new("--minutes") { Description = "How long the load runs (default 60; 2 for a smoke test).", DefaultValueFactory = _ => 60 };
    private static readonly Option<int> s_sample = new("--sample-seconds") { Description = "Seconds between memory samples (default 10).", DefaultValueFactory = _ => 10 };
    private static readonly Option<int> s_faults = new("--fault-every-seconds") { Description = "Mean seconds between kills (SIGKILL, restart after up to 2 s) of a victim; 0: no faults (default 30).", DefaultValueFactory = _ => 30 };
    private static readonly Option<int> s_units = new("--units") { Description = "Log units, in chains of two (default 2).", DefaultValueFactory = _ => 2 };
    private static readonly Option<int> s_servers = new("--servers") { Description = "Transaction servers (default 3).", DefaultValueFactory = _ => 3 };
    private static readonly Option<int> s_clients = new("--clients") { Description = "Client tasks: half list-append (checked), half YCSB-style 4 reads + 1 update (default 8).", DefaultValueFactory = _ => 8 };
    private static readonly Option<int?> s_seed = new("--seed") { Description = "Seed of the workload and the faults (default: random, printed)." };
    private static readonly Option<string> s_out = new("--out") { Description = "Where samples.csv and summary.md go (default ./soak-results).", DefaultValueFactory = _ => "soak-results" };
    private static readonly Option<string?> s_dir = new("--dir") { Description = "The cluster's directory (data and process logs); default a temporary one, removed after a passing run." };
    private static readonly Option<bool> s_growing = new("--growing-data") { Description = "Keep every retired list (the data set grows with the run), as the soak did before; by default retired lists are read and deleted, so the data set is bounded." };
    private static readonly Option<int> s_checkpointEvery = new("--checkpoint-every") { Description = "Each server's --checkpoint-every, in ordinals (default 5000).", DefaultValueFactory = _ => 5000 };
    private static readonly Option<int> s_trimKeep = new("--trim-keep-checkpoints") { Description = "Each server's --trim-keep-checkpoints (default 4; 0: the log is never trimmed).", DefaultValueFactory = _ => 4 };
    private static readonly Option<int> s_trimMargin = new("--trim-margin") { Description = "Each server's --trim-margin, in log positions (default 20000: tens of seconds of log, more than a server's restart takes).", DefaultValueFactory = _ => 20_000 };
    private static readonly Option<int> s_slots = new("--slots-per-segment") { Description = "Each log unit's --slots-per-segment (default 1024: 8 MiB segments, so a trim frees space in small steps).", DefaultValueFactory = _ => 1024 };

    public static Task<int> RunAsync(string[] args)
    {
        var root = new RootCommand("hyder-soak: a local cluster of real processes under mixed load with periodic kills; samples memory and gen-2 collections, verifies the cluster at the end.")
        {
            s_minutes, s_sample, s_faults, s_units, s_servers, s_clients, s_seed, s_out, s_dir, s_growing, s_checkpointEvery, s_trimKeep, s_trimMargin, s_slots,
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
            GrowingData = parse.GetValue(s_growing),
            CheckpointEvery = AtLeast("--checkpoint-every", parse.GetValue(s_checkpointEvery), 1),
            TrimKeepCheckpoints = AtLeast("--trim-keep-checkpoints", parse.GetValue(s_trimKeep), 0),
            TrimMargin = AtLeast("--trim-margin", parse.GetValue(s_trimMargin), 0),
            SlotsPerSegment = AtLeast("--slots-per-segment", parse.GetValue(s_slots), 16),
        };
    }

    private static async Task<int> SoakAsync(SoakOptions o, CancellationToken cancellationToken)
    {
        var directory = o.Directory ?? Path.Combine(Path.GetTempPath(), "hyder-soak-" + Guid.NewGuid().ToString("N")[..8]);
        System.IO.Directory.CreateDirectory(o.Out);
        var started = DateTime.UtcNow;
        var loadBefore = LoadAverage();
        Console.WriteLine($"hyder-soak: {o.Minutes} min, {o.Units} units, {o.Servers} servers, {o.Clients} clients, {(o.GrowingData ? "growing data set" : "bounded data set")}, checkpoint every {o.CheckpointEvery}, {(o.TrimKeepCheckpoints > 0 ? $"trim keeping {o.TrimKeepCheckpoints} checkpoints + {o.TrimMargin}" : "no trim")}, {(o.FaultEverySeconds > 0 ? $"a kill every ~{o.FaultEverySeconds} s" : "no faults")}, seed {o.Seed}; cluster in {directory}");
        var cluster = LocalCluster.Create(new LocalClusterOptions
        {
            Directory = directory,
            Units = o.Units,
            Replicas = 2,
            Servers = o.Servers,
            Hosts = HostBinaries.FromRepository(),
            ServerArguments = ServerArguments(o),
            UnitArguments = ["--slots-per-segment", o.SlotsPerSegment.ToString(CultureInfo.InvariantCulture)],
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
            var lists = new ListAppendWorkload(recorder, o.Seed, deleteRetired: !o.GrowingData);
            var load = Task.WhenAll(
                lists.RunAsync(clients, listClients, firstProcess: 0, stop.Token),
                ycsb.RunAsync(clients, o.Clients - listClients, o.Seed, stop.Token));
            var loop = o.FaultEverySeconds == 0 ? null : new KillLoop(victims, new KillLoopOptions
            {
                Seed = o.Seed,
                MinInterval = TimeSpan.FromSeconds(o.FaultEverySeconds / 2.0),
                MaxInterval = TimeSpan.FromSeconds(o.FaultEverySeconds * 1.5),
                StartAttempts = o.TrimKeepCheckpoints > 0 ? 5 : 1,
            }, line => Console.WriteLine("[FAULT] " + line));
            var faults = loop?.RunAsync(stop.Token) ?? Task.CompletedTask;

            var samples = new List<Sample>();
            var csvPath = Path.Combine(o.Out, "samples.csv");
            await using (var csv = new StreamWriter(csvPath))
            {
                await csv.WriteLineAsync("elapsed_s,process,pid,starts,rss_bytes,gen2_collections,managed_heap_bytes,committed,disk_bytes,segment_files,highest_segment").ConfigureAwait(false);
                var clock = Stopwatch.StartNew();
                var end = TimeSpan.FromMinutes(o.Minutes);
                while (clock.Elapsed < end && !cancellationToken.IsCancellationRequested)
                {
                    var batch = await SampleAsync(cluster, clients, clock.Elapsed).ConfigureAwait(false);
                    samples.AddRange(batch);
                    foreach (var s in batch)
                    {
                        await csv.WriteLineAsync(string.Create(CultureInfo.InvariantCulture, $"{s.Elapsed.TotalSeconds:F0},{s.Process},{s.Pid},{s.Starts},{s.Rss},{s.Gen2},{s.Heap},{s.Committed},{s.Disk},{s.Segments},{s.HighestSegment}")).ConfigureAwait(false);
                    }

                    await csv.FlushAsync(cancellationToken).ConfigureAwait(false);
                    var counts = recorder.Counts;
                    Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"[SAMPLE] {clock.Elapsed.TotalMinutes:F1} min: list-append ok {counts.Ok} fail {counts.Failed} unknown {counts.Unknown}; ycsb ok {ycsb.Ok} not {ycsb.NotOk}; kills {loop?.Kills.Count ?? 0}; RSS MiB {string.Join(' ', batch.Select(b => $"{b.Process}={b.Rss / 1048576.0:F0}"))}; disk MiB {string.Join(' ', batch.Where(b => b.Disk is not null).Select(b => $"{b.Process}={b.Disk!.Value / 1048576.0:F1}"))}; segments {string.Join(' ', batch.Where(b => b.Segments is not null && b.Process.StartsWith("unit-", StringComparison.Ordinal)).Select(b => $"{b.Process}={b.Segments}"))}{(o.GrowingData ? "" : $"; lists deleted {lists.DeletesOk}, waiting {lists.PendingDeletes}")}"));
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
                verification = await Verifier.VerifyAsync(clients, recorder, firstProcess: 100_000, TimeSpan.FromMinutes(5), lists.Deleted, CancellationToken.None).ConfigureAwait(false);
            }
            catch (Exception e) when (e is HyderException or OperationCanceledException or HttpRequestException)
            {
                Console.Error.WriteLine($"hyder-soak: the verification could not finish: {e}");
                return 1;
            }

            var judgements = survivors.Select(p => Judge(p.Name, samples.Where(s => s.Process == p.Name).ToArray())).ToArray();
            var diskJudgements = JudgeDisk(samples, cluster.All.Where(p => cluster.DataDirectory(p) is not null).Select(p => p.Name).ToArray());
            var trims = TrimsLogged(cluster.Servers.Select(s => Path.Combine(directory, "logs", s.Name + ".log")));
            var bounded = judgements.All(j => j.Bounded) && diskJudgements.All(j => j.Bounded);
            passed = verification.Passed;
            var plot = await Plot.WriteAsync(csvPath, Path.Combine(o.Out, "soak.png"), [.. cluster.All.Select(p => p.Name)], [.. cluster.All.Where(p => cluster.DataDirectory(p) is not null).Select(p => p.Name)], CancellationToken.None).ConfigureAwait(false);
            var summary = Summary(o, started, loadBefore, LoadAverage(), recorder.Counts, ycsb, loop?.Kills ?? [], verification, judgements, diskJudgements, trims, lists, plot);
            await File.WriteAllTextAsync(Path.Combine(o.Out, "summary.md"), summary, CancellationToken.None).ConfigureAwait(false);
            Console.WriteLine(summary);
            Console.WriteLine($"samples: {Path.GetFullPath(csvPath)}; summary: {Path.GetFullPath(Path.Combine(o.Out, "summary.md"))}");
            return !passed ? 1 : bounded ? 0 : 3;
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

            var sample = new Sample(elapsed, process.Name, process.Pid ?? 0, process.Starts, process.ResidentBytes() ?? 0, gen2, heap, committed);
            if (cluster.DataDirectory(process) is { } data)
            {
                // The files stay while a process is down, so its directory is measured whenever.
                var disk = DiskUsage.Measure(data);
                sample = sample with { Disk = disk.Bytes, Segments = disk.Segments, HighestSegment = disk.HighestSegment };
            }

            batch.Add(sample);
        }

        return batch;
    }

    private static string[] ServerArguments(SoakOptions o)
    {
        var inv = CultureInfo.InvariantCulture;
        List<string> arguments = ["--checkpoint-every", o.CheckpointEvery.ToString(inv)];
        if (o.TrimKeepCheckpoints > 0)
        {
            arguments.AddRange(["--trim-keep-checkpoints", o.TrimKeepCheckpoints.ToString(inv), "--trim-margin", o.TrimMargin.ToString(inv)]);
        }

        return [.. arguments];
    }

    /// <summary>
    /// The rule, for any figure sampled over time (a resident set, a directory's bytes on disk):
    /// drop the first 10 % of the samples (warm-up), split the rest into quartiles, and compare the
    /// mean of the last quartile with that of the first; bounded when it moved by at most
    /// <see cref="BoundedChange"/> either way (the issue's ±10 %). A first quartile of 0 is bounded
    /// only by a last quartile of 0. The least-squares slope over the same samples is reported beside it.
    /// </summary>
    internal static Trend JudgeTrend(IReadOnlyList<(TimeSpan Elapsed, double Value)> samples)
    {
        var kept = samples.Skip(samples.Count / 10).ToArray();
        if (kept.Length < 4)
        {
            return new Trend(0, 0, 0, double.NaN, Bounded: true, "too few samples to judge");
        }

        var quarter = kept.Length / 4;
        var q1 = kept.Take(quarter).Average(s => s.Value);
        var q4 = kept.Skip(kept.Length - quarter).Average(s => s.Value);
        var change = q1 == 0 ? (q4 == 0 ? 0 : double.PositiveInfinity) : (q4 - q1) / q1;
        var xsHours = kept.Select(s => s.Elapsed.TotalHours).ToArray();
        var ys = kept.Select(s => s.Value / 1048576.0).ToArray();
        var mx = xsHours.Average();
        var my = ys.Average();
        var denominator = xsHours.Sum(x => (x - mx) * (x - mx));
        var slope = denominator == 0 ? 0 : xsHours.Zip(ys).Sum(p => (p.First - mx) * (p.Second - my)) / denominator;
        var bounded = Math.Abs(change) <= BoundedChange;
        return new Trend(q1, q4, change, slope, bounded, bounded ? "bounded" : change > 0 ? "GROWING" : "SHRINKING");
    }

    /// <summary>
    /// The memory verdict on one process: <see cref="JudgeTrend"/> over its resident set (samples
    /// where it was down count for nothing), with the managed heap of the first and last quartiles
    /// and the gen-2 rate beside it.
    /// </summary>
    internal static Judgement Judge(string name, Sample[] samples)
    {
        var trend = JudgeTrend([.. samples.Where(s => s.Rss > 0).Select(s => (s.Elapsed, (double)s.Rss))]);
        var kept = samples.Where(s => s.Rss > 0).Skip(samples.Count(s => s.Rss > 0) / 10).ToArray();
        if (kept.Length < 4)
        {
            return new Judgement(name, 0, 0, 0, double.NaN, null, null, null, Bounded: true, trend.Verdict);
        }

        var quarter = kept.Length / 4;
        var first = kept.Take(quarter).ToArray();
        var last = kept.Skip(kept.Length - quarter).ToArray();
        double? heapQ1 = first.All(s => s.Heap is not null) ? first.Average(s => (double)s.Heap!.Value) : null;
        double? heapQ4 = last.All(s => s.Heap is not null) ? last.Average(s => (double)s.Heap!.Value) : null;
        double? gen2PerMinute = kept[^1].Gen2 is { } g2 && kept[0].Gen2 is { } g1 && kept[^1].Elapsed > kept[0].Elapsed
            ? (g2 - g1) / (kept[^1].Elapsed - kept[0].Elapsed).TotalMinutes
            : null;
        return new Judgement(name, trend.Q1, trend.Q4, trend.Change, trend.SlopeMiBPerHour, heapQ1, heapQ4, gen2PerMinute, trend.Bounded, trend.Verdict);
    }

    /// <summary>
    /// The disk verdicts: <see cref="JudgeTrend"/> over each named process's data directory, and
    /// over the log as a whole (the sum of the units' directories at each sample), with the
    /// largest figure seen and the segment files present at the end and deleted (a unit numbers its
    /// segments from 0, so those below the highest index ever seen that are gone were deleted by trims).
    /// </summary>
    internal static DiskJudgement[] JudgeDisk(IReadOnlyList<Sample> samples, IReadOnlyList<string> processes)
    {
        DiskJudgement One(string name, IReadOnlyList<Sample> own)
        {
            var trend = JudgeTrend([.. own.Select(s => (s.Elapsed, (double)s.Disk!.Value))]);
            var last = own.Count > 0 ? own[^1] : null;
            var highest = own.Count > 0 ? own.Max(s => s.HighestSegment ?? -1) : -1;
            var present = last?.Segments ?? 0;
            return new DiskJudgement(name, trend, own.Count > 0 ? own.Max(s => s.Disk!.Value) : 0, present, (int)Math.Max(0, highest + 1 - present));
        }

        var withDisk = samples.Where(s => s.Disk is not null).ToArray();
        var judgements = processes.Select(p => One(p, [.. withDisk.Where(s => s.Process == p)])).ToList();
        var units = processes.Where(p => p.StartsWith("unit-", StringComparison.Ordinal)).ToHashSet();
        if (units.Count > 1)
        {
            var log = withDisk.Where(s => units.Contains(s.Process)).GroupBy(s => s.Elapsed).OrderBy(g => g.Key)
                .Select(g => new Sample(g.Key, "log (all units)", 0, 0, 0, null, null, null, g.Sum(s => s.Disk!.Value), g.Sum(s => s.Segments ?? 0), g.Max(s => s.HighestSegment ?? -1)))
                .ToArray();
            var one = One("log (all units)", log);

            // Segments deleted, summed over the units (the highest index is per unit).
            judgements.Add(one with { SegmentsDeleted = judgements.Where(j => units.Contains(j.Process)).Sum(j => j.SegmentsDeleted) });
        }

        return [.. judgements];
    }

    /// <summary>Trims the servers logged (<c>trimmed the log below @MARK</c>) and the highest mark, from their process logs.</summary>
    internal static (int Count, long HighestMark) TrimsLogged(IEnumerable<string> logFiles)
    {
        const string Marker = "trimmed the log below @";
        var count = 0;
        long highest = -1;
        foreach (var file in logFiles.Where(File.Exists))
        {
            foreach (var line in File.ReadLines(file))
            {
                var at = line.IndexOf(Marker, StringComparison.Ordinal);
                if (at < 0)
                {
                    continue;
                }

                count++;
                var digits = line.AsSpan(at + Marker.Length);
                var end = 0;
                while (end < digits.Length && char.IsAsciiDigit(digits[end]))
                {
                    end++;
                }

                if (long.TryParse(digits[..end], NumberStyles.None, CultureInfo.InvariantCulture, out var mark))
                {
                    highest = Math.Max(highest, mark);
                }
            }
        }

        return (count, highest);
    }

    /// <summary>One span of the run's server restarts: how many, and their median, mean and longest time until the server served again.</summary>
    private static readonly TimeSpan RestartSpan10Minutes = TimeSpan.FromMinutes(10);

    internal sealed record RestartSpan(TimeSpan From, TimeSpan To, int Count, TimeSpan Median, TimeSpan Mean, TimeSpan Max);

    /// <summary>
    /// The restart times of the servers (victims named <c>server-…</c>) by span of load, in order:
    /// what the issue's "restart time after 10 and after 60 minutes" compares. Spans without a
    /// restart are left out.
    /// </summary>
    internal static IReadOnlyList<RestartSpan> ServerRestarts(IReadOnlyList<KillRecord> kills, TimeSpan span)
    {
        ArgumentOutOfRangeException.ThrowIfLessThanOrEqual(span, TimeSpan.Zero);
        return kills
            .Where(k => k.Victim.StartsWith("server-", StringComparison.Ordinal))
            .GroupBy(k => (long)(k.At / span))
            .OrderBy(g => g.Key)
            .Select(g =>
            {
                var times = g.Select(k => k.Restart).Order().ToArray();
                return new RestartSpan(span * g.Key, span * (g.Key + 1), times.Length, times[times.Length / 2], TimeSpan.FromTicks((long)times.Average(t => t.Ticks)), times[^1]);
            })
            .ToList();
    }

    private static string Summary(SoakOptions o, DateTime started, string loadBefore, string loadAfter, OutcomeCounts lists, YcsbCounters ycsb, IReadOnlyList<KillRecord> kills, Verification verification, Judgement[] judgements, DiskJudgement[] disks, (int Count, long HighestMark) trims, ListAppendWorkload workload, string plot)
    {
        var text = new StringBuilder();
        var inv = CultureInfo.InvariantCulture;
        text.AppendLine(inv, $"# Soak {started:yyyy-MM-dd HH:mm} UTC");
        text.AppendLine();
        text.AppendLine(inv, $"- command: `hyder-soak --minutes {o.Minutes} --units {o.Units} --servers {o.Servers} --clients {o.Clients} --fault-every-seconds {o.FaultEverySeconds} --sample-seconds {o.SampleSeconds} --checkpoint-every {o.CheckpointEvery} --trim-keep-checkpoints {o.TrimKeepCheckpoints} --trim-margin {o.TrimMargin} --slots-per-segment {o.SlotsPerSegment}{(o.GrowingData ? " --growing-data" : "")} --seed {o.Seed}`");
        text.AppendLine(inv, $"- machine: {Environment.ProcessorCount} cores, {Environment.OSVersion}, .NET {Environment.Version}; load average before {loadBefore}, after {loadAfter}");
        text.AppendLine(inv, $"- ran {(DateTime.UtcNow - started).TotalMinutes:F1} min (with start and verification)");
        text.AppendLine(inv, $"- list-append transactions: ok (acknowledged) {lists.Ok}, failed {lists.Failed}, unknown {lists.Unknown}; YCSB-style transactions ok {ycsb.Ok}, not ok {ycsb.NotOk}");
        var deleted = workload.Deleted;
        text.AppendLine(o.GrowingData
            ? "- data set: growing (retired lists kept)"
            : string.Create(inv, $"- data set: bounded; retired lists deleted {workload.DeletesOk} (delete attempts not ok {workload.DeletesNotOk}, waiting at the end {workload.PendingDeletes}); {deleted.Reads.Count} deletes' reads checked, {deleted.Unverified.Count} lists deleted after a delete of unknown outcome (their appends not checked)"));
        text.AppendLine(o.TrimKeepCheckpoints == 0
            ? "- trims: off"
            : string.Create(inv, $"- trims logged by the servers: {trims.Count}{(trims.HighestMark >= 0 ? $", the highest below @{trims.HighestMark}" : "")}"));
        text.AppendLine(kills.Count == 0
            ? "- kills: none"
            : string.Create(inv, $"- kills: {kills.Count} ({string.Join(", ", kills.GroupBy(k => k.Victim).OrderBy(g => g.Key, StringComparer.Ordinal).Select(g => $"{g.Key} {g.Count()}"))}), every one restarted{(kills.Any(k => k.Starts > 1) ? $"; {kills.Count(k => k.Starts > 1)} restarts needed more than one start ({kills.Sum(k => k.Starts - 1)} extra starts: a server that restarted behind the trim exits and is started again)" : "")}"));
        text.AppendLine(inv, $"- verification: {(verification.Passed ? "PASSED" : "FAILED")}: {(verification.Converged ? "every server at ordinal " + verification.Ordinal + " with the same hash" : "servers DIVERGED")}; acknowledged appends {verification.Acknowledged}, lost {verification.Lost.Count}; checker {(verification.Check.Valid ? "valid" : "INVALID")} for serializable ({verification.Check.Stats.Transactions} transactions)");
        text.AppendLine();
        text.AppendLine(inv, $"Memory of the processes never killed (rule: drop the first 10 % of samples, bounded when the last quartile's mean resident set is within ±{BoundedChange:P0} of the first quartile's):");
        text.AppendLine();
        text.AppendLine("| process | RSS Q1 MiB | RSS Q4 MiB | change | slope MiB/h | heap Q1 MiB | heap Q4 MiB | gen-2/min | verdict |");
        text.AppendLine("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        foreach (var j in judgements)
        {
            static string MiB(double? bytes) => bytes is { } b ? (b / 1048576.0).ToString("F1", CultureInfo.InvariantCulture) : "-";
            text.AppendLine(inv, $"| {j.Process} | {MiB(j.RssQ1)} | {MiB(j.RssQ4)} | {j.Change:P1} | {j.SlopeMiBPerHour:F1} | {MiB(j.HeapQ1)} | {MiB(j.HeapQ4)} | {(j.Gen2PerMinute is { } g ? g.ToString("F2", CultureInfo.InvariantCulture) : "-")} | {j.Verdict} |");
        }

        text.AppendLine();
        text.AppendLine(inv, $"Disk: bytes of files in each data directory (sum of file lengths), the same rule (bounded within ±{BoundedChange:P0}); the log is the units' sum:");
        text.AppendLine();
        text.AppendLine("| directory | disk Q1 MiB | disk Q4 MiB | change | slope MiB/h | max MiB | segment files at end | segments deleted | verdict |");
        text.AppendLine("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |");
        foreach (var d in disks)
        {
            text.AppendLine(inv, $"| {d.Process} | {d.Trend.Q1 / 1048576.0:F1} | {d.Trend.Q4 / 1048576.0:F1} | {d.Trend.Change:P1} | {d.Trend.SlopeMiBPerHour:F1} | {d.Max / 1048576.0:F1} | {d.SegmentsAtEnd} | {d.SegmentsDeleted} | {d.Trend.Verdict} |");
        }

        var restarts = ServerRestarts(kills, RestartSpan10Minutes);
        if (restarts.Count > 0)
        {
            text.AppendLine();
            text.AppendLine("Server restarts by 10 minutes of load (from the new process's start until it serves: its latest checkpoint, the log since, the .NET start):");
            text.AppendLine();
            text.AppendLine("| minutes | restarts | median s | mean s | max s |");
            text.AppendLine("| --- | ---: | ---: | ---: | ---: |");
            foreach (var r in restarts)
            {
                text.AppendLine(inv, $"| {r.From.TotalMinutes:F0}-{r.To.TotalMinutes:F0} | {r.Count} | {r.Median.TotalSeconds:F1} | {r.Mean.TotalSeconds:F2} | {r.Max.TotalSeconds:F1} |");
            }
        }

        text.AppendLine();
        text.AppendLine(plot);
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

/// <summary>One process's figures at one moment; server-only figures are null for log hosts or when the server did not answer; disk figures are those of the process's data directory (null for processes that keep no files).</summary>
internal sealed record Sample(TimeSpan Elapsed, string Process, int Pid, int Starts, long Rss, long? Gen2, long? Heap, long? Committed, long? Disk = null, int? Segments = null, long? HighestSegment = null);

/// <summary>The rule's result on one sampled figure: means of the first and last quartile after warm-up (in the figure's unit), their relative change, the slope in MiB per hour.</summary>
internal sealed record Trend(double Q1, double Q4, double Change, double SlopeMiBPerHour, bool Bounded, string Verdict);

/// <summary>The memory verdict on one process.</summary>
internal sealed record Judgement(string Process, double RssQ1, double RssQ4, double Change, double SlopeMiBPerHour, double? HeapQ1, double? HeapQ4, double? Gen2PerMinute, bool Bounded, string Verdict);

/// <summary>The disk verdict on one data directory (or the log, all units summed): the rule's trend, the largest figure, segment files present at the end and deleted during the run.</summary>
internal sealed record DiskJudgement(string Process, Trend Trend, long Max, int SegmentsAtEnd, int SegmentsDeleted)
{
    public bool Bounded => Trend.Bounded;
}
