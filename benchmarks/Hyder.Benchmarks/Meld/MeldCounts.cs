using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// Per-meld averages from an untimed pass over a log (the counters BenchmarkDotNet cannot show),
/// checked against the real run's decisions.
/// </summary>
public sealed class MeldCounts
{
    /// <summary>Melds counted.</summary>
    public int Melds { get; private set; }

    /// <summary>Melds that aborted.</summary>
    public int Aborts { get; private set; }

    /// <summary>Aborts by <see cref="AbortCause"/>.</summary>
    public int[] AbortsByCause { get; } = new int[5];

    /// <summary>Intention nodes visited, in total.</summary>
    public long IntentionNodes { get; private set; }

    /// <summary>State nodes visited, in total.</summary>
    public long StateNodes { get; private set; }

    /// <summary>Ephemeral nodes created, in total.</summary>
    public long EphemeralNodes { get; private set; }

    /// <summary>Sum of conflict-zone lengths.</summary>
    public long ZoneTotal { get; private set; }

    /// <summary>Nodes the brute-force validator visited, in total.</summary>
    public long BruteForceNodes { get; private set; }

    /// <summary>Intentions on which the brute-force validator decided otherwise than meld.</summary>
    public int BruteForceDisagreements { get; private set; }

    /// <summary>Average nodes visited per meld (intention + state).</summary>
    public double NodesPerMeld => Per(IntentionNodes + StateNodes);

    /// <summary>Average intention nodes visited per meld.</summary>
    public double IntentionNodesPerMeld => Per(IntentionNodes);

    /// <summary>Average state nodes visited per meld.</summary>
    public double StateNodesPerMeld => Per(StateNodes);

    /// <summary>Average ephemeral nodes created per meld.</summary>
    public double EphemeralPerMeld => Per(EphemeralNodes);

    /// <summary>Average conflict-zone length.</summary>
    public double AverageZone => Per(ZoneTotal);

    /// <summary>Share of melds that aborted.</summary>
    public double AbortRate => Per(Aborts);

    /// <summary>Average nodes the brute-force validator visited per intention.</summary>
    public double BruteForceNodesPerMeld => Per(BruteForceNodes);

    /// <summary>
    /// Trial-melds and brute-force-validates every intention once; throws when a trial decision
    /// differs from the real run's.
    /// </summary>
    public static MeldCounts Collect(MeldLog log, MeldOperator op, BruteForceValidator validator)
    {
        var c = new MeldCounts();
        for (var i = 0; i < log.Count; i++)
        {
            var o = op.Trial(log.Intentions[i], log.States[i]);
            var e = log.Expected[i];
            if (o.Committed != e.Committed || o.Cause != e.Cause)
            {
                throw new InvalidOperationException(
                    $"{log.Workload}: trial meld of {log.Intentions[i]} decided '{o}' but the real meld decided '{e}'");
            }

            c.Melds++;
            if (!o.Committed)
            {
                c.Aborts++;
                c.AbortsByCause[(int)o.Cause]++;
            }

            c.IntentionNodes += o.IntentionNodesVisited;
            c.StateNodes += o.StateNodesVisited;
            c.EphemeralNodes += o.EphemeralNodesCreated;
            c.ZoneTotal += o.ConflictZoneLength;

            var b = validator.Validate(log.Intentions[i], log.States[i]);
            c.BruteForceNodes += b.NodesVisited;
            if (b.Committed != o.Committed)
            {
                c.BruteForceDisagreements++;
            }
        }

        return c;
    }

    private double Per(long total) => Melds == 0 ? 0 : (double)total / Melds;
}
