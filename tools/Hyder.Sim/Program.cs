using System.Diagnostics;
using Hyder.Simulation;
using Hyder.Simulation.Cluster;
using Hyder.Simulation.Faults;
using Hyder.Tree;

// sim --seeds N | --seed S | --minutes M  [--start S] [--faults P] [--isolation serializable|si] [--duration-ms D] [--long] [--broadcast] [--trust-broadcast] [--split-phases] [--stripes] [--replace-units]
return SimCommand.Run(args, Console.Out, Console.Error);

/// <summary>The `sim` command line (docs/simulation.md).</summary>
internal static class SimCommand
{
    public static int Run(string[] args, TextWriter output, TextWriter error)
    {
        long? seed = null;
        var seeds = 0L;
        var start = 1L;
        double minutes = 0;
        var faults = FaultProfile.Default;
        var isolation = IsolationLevel.Serializable;
        TimeSpan? duration = null;
        var longMode = false;
        var broadcast = false;
        var trustBroadcast = false;
        bool splitPhases = false, stripes = false, replaceUnits = false;
        try
        {
            for (var i = 0; i < args.Length; i++)
            {
                if (args[i] == "--long")
                {
                    longMode = true;
                    continue;
                }

                switch (args[i])
                {
                    case "--broadcast": broadcast = true; continue;
                    case "--trust-broadcast": broadcast = true; trustBroadcast = true; continue;
                    case "--split-phases": splitPhases = true; continue;
                    case "--stripes": stripes = true; continue;
                    case "--replace-units": replaceUnits = true; continue;
                }

                var value = i + 1 < args.Length ? args[i + 1] : throw new ArgumentException($"{args[i]} needs a value");
                switch (args[i])
                {
                    case "--seed": seed = long.Parse(value); break;
                    case "--seeds": seeds = long.Parse(value); break;
                    case "--start": start = long.Parse(value); break;
                    case "--minutes": minutes = double.Parse(value, System.Globalization.CultureInfo.InvariantCulture); break;
                    case "--faults": faults = FaultProfile.Parse(value); break;
                    case "--isolation":
                        isolation = value switch
                        {
                            "serializable" => IsolationLevel.Serializable,
                            "si" => IsolationLevel.SnapshotIsolation,
                            _ => throw new ArgumentException($"--isolation takes serializable or si, not '{value}'"),
                        };
                        break;
                    case "--duration-ms": duration = TimeSpan.FromMilliseconds(long.Parse(value)); break;
                    default: throw new ArgumentException($"unknown option '{args[i]}'");
                }

                i++;
            }

            if ((seed is null ? 0 : 1) + (seeds > 0 ? 1 : 0) + (minutes > 0 ? 1 : 0) != 1)
            {
                throw new ArgumentException("give exactly one of --seed S, --seeds N, --minutes M");
            }
        }
        catch (Exception e) when (e is ArgumentException or FormatException or OverflowException)
        {
            error.WriteLine($"sim: {e.Message}");
            error.WriteLine("usage: sim (--seed S | --seeds N | --minutes M) [--start S] [--faults none|default|network|crash|torn|broadcast] [--isolation serializable|si] [--duration-ms D] [--long] [--broadcast] [--trust-broadcast] [--split-phases] [--stripes] [--replace-units]");
            return 2;
        }

        // The broadcast profile's faults are on the broadcast path: it turns broadcast on.
        broadcast |= faults.BroadcastForge > 0;
        SimOptions Options(long s, bool verbose)
        {
            var o = longMode ? SimOptions.LongRun(s, faults) : new SimOptions { Seed = s, Faults = faults };
            return o with
            {
                Isolation = isolation, Duration = duration ?? o.Duration, Verbose = verbose, Output = verbose ? output : null,
                Broadcast = broadcast, TrustBroadcast = trustBroadcast,
                SplitPhases = splitPhases, Stripes = stripes, ReplaceUnits = replaceUnits,
            };
        }

        if (seed is { } one)
        {
            var result = Simulation.Run(Options(one, verbose: true));
            output.WriteLine(result.Describe());
            if (result.CheckerReport is { } report)
            {
                output.WriteLine(report);
            }

            return result.Passed ? 0 : 1;
        }

        var clock = Stopwatch.StartNew();
        var stopAt = minutes > 0 ? TimeSpan.FromMinutes(minutes) : TimeSpan.MaxValue;
        var ran = 0L;
        var totals = new SimStats();
        int seedsTrimmed = 0, seedsRestartedFromCheckpoint = 0, seedsBehindTrim = 0;
        for (var s = start; (seeds == 0 || s < start + seeds) && clock.Elapsed < stopAt; s++)
        {
            var result = Simulation.Run(Options(s, verbose: false));
            ran++;
            totals.Add(result.Stats);
            seedsTrimmed += result.Stats.Trims > 0 ? 1 : 0;
            seedsRestartedFromCheckpoint += result.Stats.CheckpointRestarts > 0 ? 1 : 0;
            seedsBehindTrim += result.Stats.BehindTrim > 0 ? 1 : 0;
            if (!result.Passed)
            {
                output.WriteLine(result.Describe());
                output.WriteLine("  last events:");
                foreach (var line in result.RecentTrace.TakeLast(30))
                {
                    output.WriteLine("    " + line);
                }

                return 1;
            }

            if (ran % 10 == 0)
            {
                output.WriteLine($"{ran} seeds passed ({start}..{s}), {clock.Elapsed.TotalSeconds:F0} s; last: {result.Stats}");
            }
        }

        output.WriteLine($"{ran} seeds passed ({start}..{start + ran - 1}) with faults '{faults.Name}' in {clock.Elapsed.TotalSeconds:F1} s");
        output.WriteLine($"totals: {totals}");
        output.WriteLine($"per seed: {(double)totals.Committed / ran:F0} transactions committed, {(double)totals.Ordinals / ran:F0} ordinals melded, {totals.FaultyTime.TotalSeconds / ran:F1} s of virtual time with clients and faults");
        output.WriteLine(
            $"trims: {(double)totals.Trims / ran:F1} per seed (in {seedsTrimmed} of {ran} seeds); "
            + $"restarts from a checkpoint: {(double)totals.CheckpointRestarts / ran:F2} per seed (in {seedsRestartedFromCheckpoint}); "
            + $"servers behind the trim: {(double)totals.BehindTrim / ran:F2} per seed (in {seedsBehindTrim})");
        output.WriteLine($"while faults were on: {totals.Availability}");
        if (broadcast)
        {
            output.WriteLine($"{totals.Broadcast} ({(trustBroadcast ? "servers trust broadcast" : "servers check every peer's block against the log")})");
        }

        output.WriteLine(
            $"server starts: {totals.Startups} served after {totals.StartupTime.TotalMilliseconds / Math.Max(1, totals.Startups):F0} ms on average "
            + $"({totals.CheckpointLoadTime.TotalMilliseconds / Math.Max(1, totals.Startups):F0} ms of it to the first meld: settings, checkpoint), "
            + $"{totals.StartupsAbandoned} abandoned (crashed or failed before serving); "
            + $"commit latency {totals.CommitLatency.TotalMilliseconds / Math.Max(1, totals.Committed):F1} ms on average");
        output.WriteLine("failed attempts by cause:");
        foreach (var (cause, count) in totals.FailCauses.OrderByDescending(c => c.Value).ThenBy(c => c.Key, StringComparer.Ordinal))
        {
            output.WriteLine($"  {count,8}  {100.0 * count / Math.Max(1, totals.Failed),5:F1} %  {cause}");
        }

        return 0;
    }
}
