using Hyder.Ycsb.Driver;
using Hyder.Ycsb.Metrics;
using Hyder.Ycsb.Targets;
using Hyder.Ycsb.Workloads;

namespace Hyder.Ycsb.Cli;

/// <summary>The load and run phases as the commands run them.</summary>
internal static class Phases
{
    public static async Task<Report> LoadAsync(ITarget target, RunConfiguration configuration, CounterBounds counters, TextWriter status, CancellationToken cancellationToken)
    {
        var workload = configuration.Workload;
        await target.PrepareAsync(workload.KeySpaces, reset: true, cancellationToken).ConfigureAwait(false);
        var source = new LoadSource(workload.KeySpaces, configuration.Settings.LoadBatch);
        var terminal = !Console.IsErrorRedirected && ReferenceEquals(status, Console.Error);
        var settings = configuration.Settings with
        {
            Warmup = TimeSpan.Zero,
            Duration = null,
            OperationCount = null,
            TargetThroughput = 0,
            StatusInterval = terminal ? TimeSpan.FromMilliseconds(250) : configuration.Settings.StatusInterval,
        };
        var sources = Enumerable.Repeat<ITransactionSource>(source, settings.Threads).ToArray();
        var runner = new PhaseRunner(target, workload.KeySpaces, settings, new LoadProgress(status, source.TotalRecords, terminal), counters);
        return Report.Build(await runner.RunAsync("load", sources, cancellationToken).ConfigureAwait(false));
    }

    public static async Task<Report> RunAsync(ITarget target, RunConfiguration configuration, CounterBounds counters, TextWriter status, CancellationToken cancellationToken)
    {
        var settings = configuration.Settings;
        var workload = configuration.Workload;
        var sources = Enumerable.Range(0, settings.Threads).Select(w => workload.CreateSource(settings.Seed, w)).ToArray();
        var runner = new PhaseRunner(target, workload.KeySpaces, settings, new RunStatus(status), counters);
        return Report.Build(await runner.RunAsync("run", sources, cancellationToken).ConfigureAwait(false));
    }
}
