using System.Text;

namespace Hyder.Benchmarks.Meld;

public static partial class MeldReportWriter
{
    private static void WriteSymmetric(StringBuilder sb, Dictionary<string, MeldResult> byName)
    {
        MeldResult? Get(int size, int d) => Find(byName, MeldMix.ReadUpdate, Small, size, d, 50);
        sb.Append("## Symmetric case: reads and updates 1:1 (§8.1, Figures 8, 9 and 13)\n\n");
        sb.Append("Melds per second:\n\n");
        Matrix(sb, "size", Get, r => Rate(r.Meld.Median));
        sb.Append("The same by the thread's CPU time (leaves out time spent waiting for a core on a loaded machine):\n\n");
        Matrix(sb, "size", Get, r => Rate(r.Meld.CpuMedian));
        sb.Append("Nodes visited per meld (intention + state), with the paper's Figure 9 measure:\n\n");
        Matrix(sb, "size", Get, r => F(r.Counts.NodesPerMeld));
        sb.Append("Ephemeral nodes created per meld:\n\n");
        Matrix(sb, "size", Get, r => F(r.Counts.EphemeralPerMeld));
        sb.Append("Abort rate (Appendix F, Figure 13):\n\n");
        Matrix(sb, "size", Get, r => Pct(r.Counts.AbortRate));
        sb.Append("Bytes allocated per meld:\n\n");
        Matrix(sb, "size", Get, r => F(r.MeldBytes, "F2"));
    }

    private static void WriteReadSweep(StringBuilder sb, Dictionary<string, MeldResult> byName)
    {
        (int Size, int Degree)[] series = [(2, 16), (2, 64), (8, 16), (8, 64)];
        var percents = MeldSuites.ReadPercents.Append(50).Order().ToArray();
        sb.Append("## Read percentage (§8.2, Figure 10)\n\n");
        sb.Append("Melds per second, and in brackets the share of reads among the melded transactions' operations ");
        sb.Append("(read-only transactions never reach the log; the 50 % row is the exact 1:1 mix of the symmetric suite):\n\n");
        SweepTable(r => $"{Rate(r.Meld.Median)} ({F(r.ReadShare * 100, "F0")} %)");
        sb.Append("Nodes visited and ephemeral nodes per meld:\n\n");
        SweepTable(r => $"{F(r.Counts.NodesPerMeld)} / {F(r.Counts.EphemeralPerMeld)}");

        void SweepTable(Func<MeldResult, string> cell)
        {
            sb.Append("| read % |");
            foreach (var (size, d) in series)
            {
                sb.Append(s_inv, $" con-d{d}-#op{size} |");
            }

            sb.Append("\n|--:|").Append(string.Concat(Enumerable.Repeat("--:|", series.Length))).Append('\n');
            foreach (var p in percents)
            {
                sb.Append("| ").Append(p).Append(" |");
                foreach (var (size, d) in series)
                {
                    var r = Find(byName, MeldMix.ReadUpdate, Small, size, d, p);
                    sb.Append(' ').Append(r is null ? "–" : cell(r)).Append(" |");
                }

                sb.Append('\n');
            }

            sb.Append('\n');
        }
    }

    private static void WriteAsymmetric(StringBuilder sb, Dictionary<string, MeldResult> byName)
    {
        MeldResult? Get(int size, int d) => Find(byName, MeldMix.ReadInsert, Small, size, d, 50);
        sb.Append("## Asymmetric case: reads and inserts 1:1 (§8.3, Figure 11)\n\n");
        sb.Append("Melds per second (inserted keys are fresh and fall uniformly in the gaps of the initial table):\n\n");
        Matrix(sb, "size", Get, r => Rate(r.Meld.Median));
        sb.Append("Throughput relative to the symmetric case (ri ÷ rw; the paper: within 10 %, 22 % slower at d64 and 32 ops):\n\n");
        Matrix(sb, "size", Get, r => Find(byName, MeldMix.ReadUpdate, Small, r.Workload.Size, r.Workload.Degree, 50) is { } rw
            ? F(r.Meld.Median / rw.Meld.Median, "F2")
            : "–");
        sb.Append("Nodes visited / ephemeral nodes per meld, and abort rate:\n\n");
        Matrix(sb, "size", Get, r => $"{F(r.Counts.NodesPerMeld)} / {F(r.Counts.EphemeralPerMeld)}, {Pct(r.Counts.AbortRate)}");
    }

    private static void WriteBruteForce(StringBuilder sb, Dictionary<string, MeldResult> byName)
    {
        sb.Append("## Meld against brute force (Appendix F, Figure 14)\n\n");
        sb.Append("Meld throughput ÷ brute-force validator throughput on the same intentions (issue 3 target ≥ 3x; the paper ≈ 2x). ");
        sb.Append("rw, symmetric case:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadUpdate, Small, s, d, 50), r => F(r.Speedup, "F2"));
        sb.Append("ri, asymmetric case:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadInsert, Small, s, d, 50), r => F(r.Speedup, "F2"));
        sb.Append("The brute-force validator decides only and builds no tree, so the tables above favour it. Meld deciding only (`MeldOperator.Decide`: ");
        sb.Append("the same recursion making no ephemeral node, the paper's MeldNoEphem) ÷ brute force, timed alternately, rw:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadUpdate, Small, s, d, 50), r => F(r.DecideSpeedup, "F2"));
        sb.Append("ri:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadInsert, Small, s, d, 50), r => F(r.DecideSpeedup, "F2"));
        sb.Append("Brute-force validations per second and nodes visited per intention, rw:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadUpdate, Small, s, d, 50), r => $"{Rate(r.BruteForce.Median)} ({F(r.Counts.BruteForceNodesPerMeld, "F0")})");
    }

    private static void WriteTreeDepth(StringBuilder sb, Dictionary<string, MeldResult> byName)
    {
        MeldResult? Get(int size, int d) => Find(byName, MeldMix.ReadUpdate, MeldSuites.LargeTable, size, d, 50);
        sb.Append("## Table size: 512K against 128K keys (Appendix F, Figure 15)\n\n");
        sb.Append("Melds per second with 512K keys (two levels deeper), rw 1:1:\n\n");
        Matrix(sb, "size", Get, r => Rate(r.Meld.Median));
        sb.Append("Relative to 128K keys (512K ÷ 128K; the paper: nearly identical):\n\n");
        Matrix(sb, "size", Get, r => Find(byName, MeldMix.ReadUpdate, Small, r.Workload.Size, r.Workload.Degree, 50) is { } small
            ? F(r.Meld.Median / small.Meld.Median, "F2")
            : "–");
        sb.Append("Nodes visited per meld with 512K keys:\n\n");
        Matrix(sb, "size", Get, r => F(r.Counts.NodesPerMeld));
    }

    private static void WriteCacheResident(StringBuilder sb, Dictionary<string, MeldResult> byName)
    {
        sb.Append("## Cache-resident: 64 intentions per pass\n\n");
        sb.Append("The same configurations with a log of 64 intentions melded over and over, so intentions and the state nodes they ");
        sb.Append("reach stay in cache, as a freshly deserialized intention would be. The streaming tables above (4,096 intentions, ");
        sb.Append("each touched once per pass) pay for cache misses on most intention and lower-level state nodes.\n\n");
        sb.Append("rw 1:1, melds per second:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadUpdate, Small, s, d, 50, hot: true), r => Rate(r.Meld.Median));
        sb.Append("ri 1:1, melds per second:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadInsert, Small, s, d, 50, hot: true), r => Rate(r.Meld.Median));
        sb.Append("Meld ÷ brute force, rw:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadUpdate, Small, s, d, 50, hot: true), r => F(r.Speedup, "F2"));
        sb.Append("Meld ÷ brute force, ri:\n\n");
        Matrix(sb, "size", (s, d) => Find(byName, MeldMix.ReadInsert, Small, s, d, 50, hot: true), r => F(r.Speedup, "F2"));
    }
}
