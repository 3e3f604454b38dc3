using System.Globalization;
using System.Text;

namespace Hyder.Benchmarks.Meld;

/// <summary>Renders docs/benchmarks/meld.md from a run's results.</summary>
public static partial class MeldReportWriter
{
    private const string NotesBegin = "<!-- notes:begin -->";
    private const string NotesEnd = "<!-- notes:end -->";

    private static readonly CultureInfo s_inv = CultureInfo.InvariantCulture;

    /// <summary>The hand-written notes of an earlier report (kept when it is regenerated), or null.</summary>
    public static string? KeptNotes(string previous)
    {
        var b = previous.IndexOf(NotesBegin, StringComparison.Ordinal);
        var e = previous.IndexOf(NotesEnd, StringComparison.Ordinal);
        return b >= 0 && e > b ? previous[(b + NotesBegin.Length)..e].Trim('\n') : null;
    }

    /// <summary>The whole report.</summary>
    public static string Write(MeldRun run, IReadOnlyList<MeldResult> results, string? notes)
    {
        var byName = results.ToDictionary(r => r.Workload.Name);
        var sb = new StringBuilder();
        WriteHeader(sb, run);
        WriteTargets(sb, results, byName);
        WriteSymmetric(sb, byName);
        WriteReadSweep(sb, byName);
        WriteAsymmetric(sb, byName);
        WriteBruteForce(sb, byName);
        WriteTreeDepth(sb, byName);
        WriteCacheResident(sb, byName);
        WriteDetails(sb, results);
        sb.Append("\n## Notes\n\n").Append(NotesBegin).Append('\n');
        sb.Append(notes ?? "(hand-written observations go here; the report command keeps this section)").Append('\n');
        sb.Append(NotesEnd).Append('\n');
        return sb.ToString();
    }

    private static MeldResult? Find(Dictionary<string, MeldResult> byName, MeldMix mix, int keys, int size, int degree, int read, bool hot = false) =>
        byName.GetValueOrDefault(new MeldWorkload(string.Empty, mix, keys, size, degree, read, hot ? MeldSuites.HotCount : MeldSuites.FullCount).Name);

    private static string Rate(double perSecond) => perSecond.ToString("N0", s_inv);

    private static string F(double value, string format = "F1") => value.ToString(format, s_inv);

    private static string Pct(double share) => (share * 100).ToString("F1", s_inv) + " %";

    /// <summary>A table of one figure by transaction size (rows) and concurrency degree (columns).</summary>
    private static void Matrix(StringBuilder sb, string corner, Func<int, int, MeldResult?> get, Func<MeldResult, string> cell)
    {
        sb.Append("| ").Append(corner).Append(" |");
        foreach (var d in MeldSuites.Degrees)
        {
            sb.Append(" con-d").Append(d).Append(" |");
        }

        sb.Append("\n|---|").Append(string.Concat(Enumerable.Repeat("--:|", MeldSuites.Degrees.Length))).Append('\n');
        foreach (var size in MeldSuites.Sizes)
        {
            sb.Append("| ").Append(size).Append(" ops |");
            foreach (var d in MeldSuites.Degrees)
            {
                var r = get(size, d);
                sb.Append(' ').Append(r is null ? "–" : cell(r)).Append(" |");
            }

            sb.Append('\n');
        }

        sb.Append('\n');
    }

    private static void WriteDetails(StringBuilder sb, IReadOnlyList<MeldResult> results)
    {
        sb.Append("\n## Every configuration\n\n");
        sb.Append("Series names: `rw`/`ri` (read-update / read-insert), table size, `op` operations per transaction, ");
        sb.Append("`d` concurrency degree, `r` read percentage, `-n64` cache-resident. melds/s is the Stopwatch median, best the fastest ");
        sb.Append("repetition, CPU the median by thread CPU time. Visited = intention + state nodes per meld; spread = ");
        sb.Append("(highest − lowest) / median of the repetitions; B = bytes allocated per meld on the timing thread; ");
        sb.Append("BF = brute-force validator; disagree = intentions the validator decided otherwise than meld.\n\n");
        sb.Append("| configuration | melds/s | best | CPU | spread | visited (I + S) | ephemeral | zone | aborts | B/meld | BF/s | BF visited | BF B/op | meld ÷ BF | disagree |\n");
        sb.Append("|---|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n");
        foreach (var r in results)
        {
            var c = r.Counts;
            sb.Append(s_inv, $"| {r.Workload.Name} | {Rate(r.Meld.Median)} | {Rate(r.Meld.Best)} | {Rate(r.Meld.CpuMedian)} | {Pct(r.Spread)} | {F(c.NodesPerMeld)} ({F(c.IntentionNodesPerMeld)} + {F(c.StateNodesPerMeld)}) | {F(c.EphemeralPerMeld)} | {F(c.AverageZone)} | {Pct(c.AbortRate)} | {F(r.MeldBytes, "F2")} | {Rate(r.BruteForce.Median)} | {F(c.BruteForceNodesPerMeld)} | {F(r.BruteForceBytes, "F1")} | {F(r.Speedup, "F2")} | {c.BruteForceDisagreements} |\n");
        }
    }
}
