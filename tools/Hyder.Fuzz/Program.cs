using System.Globalization;
using Hyder.Fuzz.Engine;
using Hyder.Fuzz.Targets;

namespace Hyder.Fuzz;

/// <summary>
/// The fuzzer's command line. <c>--target all|NAME --cases N --seed S --minutes M</c> runs cases;
/// <c>--target NAME --seed S --case N</c> replays one; <c>--list</c> names the targets. Exit code 0:
/// no finding; 1: findings; 2: bad options.
/// </summary>
public static class Program
{
    private const string Usage = """
        Usage: Hyder.Fuzz [--target all|NAME] [--cases N] [--seed S] [--minutes M] [--timeout-ms T]
               Hyder.Fuzz --target NAME --seed S --case N     replay one case (prints its input)
               Hyder.Fuzz --list                               the targets and what they decode

          --target      a target name or all (default all)
          --cases       cases per target (default 1000000: the long mode)
          --seed        the run's seed (default 1); with a case number it fixes the case's bytes
          --first-case  the first case number (default 0)
          --minutes     stop each target after M minutes, whatever --cases says
          --timeout-ms  a case running longer is a hang (default 1000)
        Exit code: 0 no finding, 1 findings, 2 bad options.
        """;

    /// <summary>Runs the command line; returns the exit code.</summary>
    public static int Main(string[] args)
    {
        string target = "all";
        var options = new FuzzOptions();
        long? replay = null;
        var list = false;
        try
        {
            for (var i = 0; i < args.Length; i++)
            {
                string Next() => i + 1 < args.Length ? args[++i] : throw new FormatException($"{args[i]} needs a value");
                switch (args[i])
                {
                    case "--target":
                        target = Next();
                        break;
                    case "--cases":
                        options = options with { Cases = Positive(long.Parse(Next(), CultureInfo.InvariantCulture)) };
                        break;
                    case "--seed":
                        options = options with { Seed = ulong.Parse(Next(), CultureInfo.InvariantCulture) };
                        break;
                    case "--first-case":
                        options = options with { FirstCase = NonNegative(long.Parse(Next(), CultureInfo.InvariantCulture)) };
                        break;
                    case "--case":
                        replay = NonNegative(long.Parse(Next(), CultureInfo.InvariantCulture));
                        break;
                    case "--minutes":
                        options = options with { TimeLimit = TimeSpan.FromMinutes(Positive(double.Parse(Next(), CultureInfo.InvariantCulture))) };
                        break;
                    case "--timeout-ms":
                        options = options with { CaseTimeout = TimeSpan.FromMilliseconds(Positive(int.Parse(Next(), CultureInfo.InvariantCulture))) };
                        break;
                    case "--list":
                        list = true;
                        break;
                    case "--help" or "-h":
                        Console.WriteLine(Usage);
                        return 0;
                    default:
                        throw new FormatException($"unknown option {args[i]}");
                }
            }

            if (target != "all" && !TargetRegistry.Names.Contains(target))
            {
                throw new FormatException($"no target named {target} (--list names them)");
            }

            if (replay is not null && target == "all")
            {
                throw new FormatException("--case replays one case of one --target");
            }
        }
        catch (Exception e) when (e is FormatException or OverflowException or ArgumentOutOfRangeException)
        {
            Console.Error.WriteLine($"Hyder.Fuzz: {e.Message}");
            Console.Error.WriteLine(Usage);
            return 2;
        }

        if (list)
        {
            foreach (var t in TargetRegistry.Create())
            {
                Console.WriteLine($"{t.Name,-16} {t.Corpus.Count,3} seeds  {t.Description}");
                Console.WriteLine($"{"",-16}            rejects with: {string.Join(", ", t.Documented.Select(d => d.Name))}");
                t.Dispose();
            }

            return 0;
        }

        return replay is { } number ? Replay(target, options, number) : Run(target, options);
    }

    private static int Run(string name, FuzzOptions options)
    {
        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"Hyder.Fuzz: seed {options.Seed}, cases {options.FirstCase}..{options.FirstCase + options.Cases - 1} per target{(options.TimeLimit is { } l ? $", at most {l.TotalMinutes:G} min per target" : "")}, case budget {options.CaseTimeout.TotalMilliseconds:F0} ms; {Environment.ProcessorCount} cores, {System.Runtime.InteropServices.RuntimeInformation.OSDescription}, .NET {Environment.Version}, {DateTime.UtcNow:yyyy-MM-dd HH:mm} UTC"));
        var reports = new List<TargetReport>();
        var targets = name == "all" ? TargetRegistry.Create() : [TargetRegistry.Create(name)!];
        foreach (var target in targets)
        {
            using (target)
            {
                Console.WriteLine($"{target.Name}: {target.Corpus.Count} seeds; {target.Description}");
                var report = new FuzzRunner(options, Console.WriteLine).Run(target);
                reports.Add(report);
                Console.WriteLine(report.ProgressLine(report.Elapsed) + (report.StoppedByTime ? " (time limit)" : ""));
                foreach (var (message, count) in report.RejectionsByMessage.Take(8))
                {
                    Console.WriteLine(string.Create(CultureInfo.InvariantCulture, $"    {count,9:N0}  {message}"));
                }

                if (report.RejectionsByMessage.Count > 8)
                {
                    Console.WriteLine($"    ... {report.RejectionsByMessage.Count - 8} more kinds of rejection");
                }

                foreach (var finding in report.Findings.GroupBy(f => f.Signature).Select(g => g.First()))
                {
                    Console.WriteLine(finding.Format());
                }
            }
        }

        Console.WriteLine();
        Console.WriteLine("| target | cases | seconds | cases/s | accepted | rejected | rejection kinds | findings |");
        Console.WriteLine("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |");
        foreach (var r in reports)
        {
            Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
                $"| {r.Target} | {r.Cases:N0} | {r.Elapsed.TotalSeconds:F0} | {r.Cases / Math.Max(r.Elapsed.TotalSeconds, 0.001):N0} | {r.Successes:N0} | {r.Rejections:N0} | {r.RejectionsByMessage.Count} | {r.FindingCount} |"));
        }

        var findings = reports.Sum(r => r.FindingCount);
        Console.WriteLine(findings == 0 ? "No findings." : $"{findings} finding(s): replay each with the command printed above it.");
        return findings == 0 ? 0 : 1;
    }

    private static int Replay(string name, FuzzOptions options, long number)
    {
        using var target = TargetRegistry.Create(name)!;
        var result = new FuzzRunner(options).RunCase(target, number);
        var c = result.Case;
        Console.WriteLine($"target {name}, seed {options.Seed}, case {number}: from {c.Origin}");
        foreach (var step in c.Steps)
        {
            Console.WriteLine($"  {step}");
        }

        Console.WriteLine(string.Create(CultureInfo.InvariantCulture,
            $"outcome: {result.Outcome}; {c.Input.Length} bytes, {result.Allocated} bytes allocated (bound {target.AllocationBound(c.Input.Length)}), {result.Elapsed.TotalMilliseconds:F2} ms"));
        if (result.Finding is { } finding)
        {
            Console.WriteLine(finding.Format(int.MaxValue));
            return 1;
        }

        if (result.Exception is { } e)
        {
            Console.WriteLine($"rejected: {e.GetType().Name}: {e.Message}");
        }

        Console.Write(HexDump.Format(c.Input, int.MaxValue));
        return 0;
    }

    private static T Positive<T>(T value)
        where T : System.Numerics.INumber<T> =>
        value > T.Zero ? value : throw new FormatException($"{value} is not positive");

    private static T NonNegative<T>(T value)
        where T : System.Numerics.INumber<T> =>
        value >= T.Zero ? value : throw new FormatException($"{value} is negative");
}
