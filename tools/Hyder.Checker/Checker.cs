using System.Diagnostics;
using System.Text;

namespace Hyder.Checker;

/// <summary>What to check and how hard to look.</summary>
public sealed record CheckOptions
{
    /// <summary>The model the history must satisfy; decides which anomalies are violations.</summary>
    public ConsistencyModel Model { get; init; } = ConsistencyModel.Serializable;

    /// <summary>Add real-time edges and look for -realtime cycles (default: only for strict serializable).</summary>
    public bool? Realtime { get; init; }

    /// <summary>Known version order per register key, oldest first (for example from the database's log).</summary>
    public IReadOnlyDictionary<long, IReadOnlyList<long>>? RegisterVersionOrder { get; init; }

    /// <summary>A register write installs a later version than the one its transaction read before it (default true).</summary>
    public bool WriteFollowsRead { get; init; } = true;

    /// <summary>Bound on path searches per strongly connected component and class.</summary>
    public int SearchesPerComponent { get; init; } = 200;
}

/// <summary>
/// Checks a history the way Elle does: infer dependencies between transactions from the values
/// they read and wrote, then look for the anomalies the model forbids. See docs/checker.md.
/// </summary>
public static class HistoryChecker
{
    /// <summary>Checks <paramref name="history"/>; throws <see cref="InvalidHistoryException"/> when it is malformed.</summary>
    public static CheckResult Check(History history, CheckOptions? options = null)
    {
        options ??= new CheckOptions();
        var clock = Stopwatch.StartNew();
        var inf = new Inference(history.Transactions);
        InternalConsistency.Analyze(inf);
        ListAppendAnalyzer.Analyze(inf);
        RegisterAnalyzer.Analyze(inf, options.RegisterVersionOrder, options.WriteFollowsRead);
        var realtime = options.Realtime ?? options.Model == ConsistencyModel.StrictSerializable;
        if (realtime)
        {
            RealtimeOrder.Analyze(inf);
        }

        inf.Graph.Seal();
        new CycleSearch(inf, options.SearchesPerComponent).Run(realtime);
        var stats = new CheckStats(inf.Txns.Count, inf.Graph.Count(EdgeKind.WW), inf.Graph.Count(EdgeKind.WR), inf.Graph.Count(EdgeKind.RW), inf.Graph.Count(EdgeKind.Realtime), clock.Elapsed);
        return new CheckResult(options.Model, inf.Found, stats);
    }
}

/// <summary>Size of the inferred graph and the time the check took.</summary>
public sealed record CheckStats(int Transactions, int WW, int WR, int RW, int Realtime, TimeSpan Elapsed);

/// <summary>The anomalies found and the verdict for the model.</summary>
public sealed class CheckResult
{
    internal CheckResult(ConsistencyModel model, IReadOnlyList<Anomaly> anomalies, CheckStats stats)
    {
        Model = model;
        Anomalies = anomalies;
        Stats = stats;
        var forbidden = ConsistencyModels.Forbidden(model);
        Violations = anomalies.Where(a => forbidden.Contains(a.Name)).ToArray();
    }

    /// <summary>The model judged.</summary>
    public ConsistencyModel Model { get; }

    /// <summary>Every anomaly found, allowed by the model or not.</summary>
    public IReadOnlyList<Anomaly> Anomalies { get; }

    /// <summary>The anomalies the model forbids.</summary>
    public IReadOnlyList<Anomaly> Violations { get; }

    /// <summary>Graph size and time.</summary>
    public CheckStats Stats { get; }

    /// <summary>True when nothing the model forbids was found.</summary>
    public bool Valid => Violations.Count == 0;

    /// <summary>The distinct anomaly names found, sorted.</summary>
    public IReadOnlyList<string> Names => Anomalies.Select(a => a.Name).Distinct().Order(StringComparer.Ordinal).ToArray();

    /// <summary>True when an anomaly of that name was found.</summary>
    public bool Has(string name) => Anomalies.Any(a => a.Name == name);

    /// <summary>Whether <paramref name="model"/> would accept the same anomalies.</summary>
    public bool ValidFor(ConsistencyModel model)
    {
        var forbidden = ConsistencyModels.Forbidden(model);
        return !Anomalies.Any(a => forbidden.Contains(a.Name));
    }

    /// <summary>The report: verdict line, counts, then every anomaly with its transactions and edges.</summary>
    public override string ToString()
    {
        var sb = new StringBuilder();
        sb.Append(Valid ? "valid" : "INVALID").Append(" for ").Append(Model)
          .Append(": ").Append(Stats.Transactions).Append(" transactions, ww ").Append(Stats.WW)
          .Append(", wr ").Append(Stats.WR).Append(", rw ").Append(Stats.RW).Append(", rt ").Append(Stats.Realtime)
          .Append(" edges, ").Append(Stats.Elapsed.TotalMilliseconds.ToString("F0", System.Globalization.CultureInfo.InvariantCulture)).Append(" ms\n");
        foreach (var group in Anomalies.GroupBy(a => a.Name))
        {
            var verdict = Violations.Any(v => v.Name == group.Key) ? "forbidden" : "allowed";
            sb.Append(group.Key).Append(": ").Append(group.Count()).Append(" (").Append(verdict).Append(")\n");
        }

        foreach (var a in Anomalies)
        {
            sb.Append('\n').Append(a);
        }

        return sb.ToString();
    }
}
