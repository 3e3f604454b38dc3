using System.CommandLine;
using System.Text.Json;
using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;

namespace Hyder.Ycsb.Cli;

/// <summary>
/// The <c>load</c> and <c>run</c> commands. Exit codes: 0 done; 1 the target failed during the
/// run (an error that is not an abort, or an unreachable target); 2 bad options or an option that is
/// not available yet, with a message and the usage.
/// </summary>
internal static class YcsbCommands
{
    public static RootCommand Create(TextWriter output, TextWriter error)
    {
        var root = new RootCommand("Hyder YCSB: a YCSB-style load generator with multi-operation transactions.");
        var load = new Command("load", "Create the key spaces' tables, empty them and insert the initial records.");
        var run = new Command("run", "Run the workload's transactions and report YCSB-style latencies and commit/abort counts.");
        foreach (var option in YcsbOptions.Common)
        {
            load.Options.Add(option);
            run.Options.Add(option);
        }

        foreach (var option in YcsbOptions.RunOnly)
        {
            run.Options.Add(option);
        }

        load.SetAction((parse, cancel) => ExecuteAsync(parse, run: false, output, error, cancel));
        run.SetAction((parse, cancel) => ExecuteAsync(parse, run: true, output, error, cancel));
        root.Subcommands.Add(load);
        root.Subcommands.Add(run);
        return root;
    }

    /// <summary>
    /// What runs without arguments (the README's first command): an embedded Hyder cluster loaded
    /// with 100,000 records of 1 KiB, then Hyder II's transaction shape (8 reads and 2 writes of
    /// uniform keys, serializable) from 64 concurrent sessions: 5 s of warm-up and 30 s measured,
    /// about a minute on a 2-core machine. Its server's final-meld thread asks for a raised priority
    /// (docs/server.md, "Final meld's priority"); a <c>run</c> asks only when given the option.
    /// </summary>
    public static readonly string[] MainJob =
    [
        "run", "--load", "--target", "embedded", "--workload", "tx", "--reads", "8", "--writes", "2", "--isolation", "serializable",
        "--record-count", "100000", "--value-size", "1024", "--threads", "2", "--in-flight", "32", "--warmup", "5", "--duration", "30",
        "--final-meld-nice", "-10",
    ];

    /// <summary>Parses and runs; parse errors print the errors and the usage and return 2. No arguments run <see cref="MainJob"/>.</summary>
    public static async Task<int> InvokeAsync(string[] args, TextWriter output, TextWriter error, CancellationToken cancellationToken = default)
    {
        if (args.Length == 0)
        {
            await error.WriteLineAsync($"# no command given: running the main job (hyder-ycsb {string.Join(' ', MainJob)}); --help lists the commands").ConfigureAwait(false);
            args = MainJob;
        }

        var root = Create(output, error);
        var parse = root.Parse(args);
        if (parse.Errors.Count > 0 || parse.CommandResult.Command == root && !args.Any(a => a is "--help" or "-h" or "-?" or "--version"))
        {
            foreach (var e in parse.Errors)
            {
                await error.WriteLineAsync($"error: {e.Message}").ConfigureAwait(false);
            }

            if (parse.Errors.Count == 0)
            {
                await error.WriteLineAsync("error: name a command: load or run (or give no arguments at all for the main job).").ConfigureAwait(false);
            }

            await PrintUsageAsync(root, parse.CommandResult.Command, error).ConfigureAwait(false);
            return 2;
        }

        return await parse.InvokeAsync(new InvocationConfiguration { Output = output, Error = error }, cancellationToken).ConfigureAwait(false);
    }

    private static async Task<int> ExecuteAsync(ParseResult parse, bool run, TextWriter output, TextWriter error, CancellationToken cancellationToken)
    {
        RunConfiguration configuration;
        try
        {
            configuration = RunConfiguration.From(parse, run);
        }
        catch (UsageException e)
        {
            await error.WriteLineAsync($"error: {e.Message}").ConfigureAwait(false);
            await PrintUsageAsync(parse.RootCommandResult.Command, parse.CommandResult.Command, error).ConfigureAwait(false);
            return 2;
        }

        try
        {
            await using var target = await configuration.CreateTargetAsync(cancellationToken).ConfigureAwait(false);
            var settings = configuration.Describe(target);
            await output.WriteLineAsync($"# Hyder YCSB {(run ? "run" : "load")}: {settings["workload"]}").ConfigureAwait(false);
            await output.WriteLineAsync($"# target {settings["target"]}; {settings["machine"]}").ConfigureAwait(false);
            var reports = new List<Report>();
            var counters = new CounterBounds(startsAtZero: !run || configuration.LoadFirst);
            if (!run || configuration.LoadFirst)
            {
                reports.Add(await Phases.LoadAsync(target, configuration, counters, error, cancellationToken).ConfigureAwait(false));
            }
            else
            {
                await target.PrepareAsync(configuration.Workload.KeySpaces, reset: false, cancellationToken).ConfigureAwait(false);
            }

            if (run)
            {
                reports.Add(await Phases.RunAsync(target, configuration, counters, error, cancellationToken).ConfigureAwait(false));
            }

            foreach (var report in reports)
            {
                await output.WriteLineAsync($"# {report.Result.Phase} phase").ConfigureAwait(false);
                report.WriteText(output);
            }

            if (run)
            {
                reports[^1].WriteSummary(output);
            }

            await WriteFilesAsync(configuration, reports, settings).ConfigureAwait(false);
            return 0;
        }
        catch (TargetUnavailableException e)
        {
            await error.WriteLineAsync($"error: {e.Message}").ConfigureAwait(false);
            return 1;
        }
        catch (ArgumentException e) when (e.ParamName == "connectionString")
        {
            await error.WriteLineAsync($"error: {e.Message}").ConfigureAwait(false);
            return 2;
        }
    }

    private static async Task WriteFilesAsync(RunConfiguration configuration, List<Report> reports, IReadOnlyDictionary<string, string> settings)
    {
        if (configuration.JsonPath is { } json)
        {
            await using var stream = File.Create(json);
            await using var writer = new Utf8JsonWriter(stream, new JsonWriterOptions { Indented = true });
            writer.WriteStartArray();
            foreach (var report in reports)
            {
                report.WriteJson(writer, settings);
            }

            writer.WriteEndArray();
        }

        if (configuration.CsvPath is { } csv)
        {
            await using var writer = new StreamWriter(csv);
            for (var i = 0; i < reports.Count; i++)
            {
                reports[i].WriteCsv(writer, header: i == 0);
            }
        }
    }

    private static async Task PrintUsageAsync(Command root, Command command, TextWriter error)
    {
        var path = command == root ? ["--help"] : new[] { command.Name, "--help" };
        await root.Parse(path).InvokeAsync(new InvocationConfiguration { Output = error }).ConfigureAwait(false);
    }
}
