using Hyder.Server.Cluster;

namespace Hyder.Ycsb.Targets.Hyder;

/// <summary>What <c>--target embedded</c> starts: servers, the pipeline they share, where the log lives.</summary>
internal sealed record EmbeddedClusterSettings
{
    /// <summary>Transaction servers on the one log (each melds every intention).</summary>
    public int Servers { get; init; } = 1;

    /// <summary>The cluster settings every server and the log's first record agree on (premeld, group meld).</summary>
    public ClusterSettings Cluster { get; init; } = new();

    /// <summary>The log's directory, kept after the run; null: a temporary directory, removed after.</summary>
    public string? DataDirectory { get; init; }

    /// <summary>Whether an append waits for an fsync (group commit) or only the page cache.</summary>
    public bool Fsync { get; init; } = true;

    /// <summary>The embedded log's group-commit delay (<see cref="global::Hyder.Log.Units.LogUnitOptions.CommitDelay"/>).</summary>
    public TimeSpan CommitDelay { get; init; } = global::Hyder.Log.Units.LogUnitOptions.EmbeddedCommitDelay;

    /// <summary>How many of the embedded log's newest durable slots stay in the page cache (<see cref="global::Hyder.Log.Units.LogUnitOptions.CachedSlots"/>; 0: all).</summary>
    public int PageCacheSlots { get; init; } = global::Hyder.Log.Units.LogUnitOptions.DefaultCachedSlots;

    /// <summary>The nice value each server's final-meld thread asks for (<see cref="global::Hyder.Tree.Pipeline.PipelineThreading.FinalMeldNice"/>; 0: none).</summary>
    public int FinalMeldNice { get; init; }

    /// <summary>Whether Add goes to the servers as a commutative operation (else a read and a write).</summary>
    public bool Commutative { get; init; }

    /// <summary>Transactions in flight at once (sizes the servers' admission limits).</summary>
    public int Sessions { get; init; } = 1;

    /// <summary>The pipeline as the reports name it.</summary>
    public string Pipeline => Describe(Cluster);

    public static string Describe(ClusterSettings cluster)
    {
        var premeld = cluster.PremeldThreads > 0 ? $"premeld t={cluster.PremeldThreads} d={cluster.Distance}" : null;
        return (premeld, cluster.GroupMeld) switch
        {
            (null, false) => "final meld only",
            (null, true) => "group meld",
            (_, false) => premeld,
            _ => premeld + " + group meld",
        };
    }
}
