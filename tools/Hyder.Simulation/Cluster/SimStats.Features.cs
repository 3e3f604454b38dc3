namespace Hyder.Simulation.Cluster;

/// <summary>Counts of split phases, stripes and unit replacements (docs/simulation.md).</summary>
public sealed partial class SimStats
{
    /// <summary>Counter Adds of committed transactions.</summary>
    public int CounterAddsCommitted { get; set; }

    /// <summary>Counter Adds of transactions with an unknown outcome.</summary>
    public int CounterAddsUnknown { get; set; }

    /// <summary>Counter reads of committed transactions (each met a split key or a reconciled value).</summary>
    public int CounterReads { get; set; }

    /// <summary>Operation lists staged in a split-phase table instead of the tree (the most of any settled server).</summary>
    public long SplitStaged { get; set; }

    /// <summary>Split phases ended (the most of any settled server).</summary>
    public long SplitPhasesEnded { get; set; }

    /// <summary>Keys written into the tree by reconciliations (the most of any settled server).</summary>
    public long SplitReconciledKeys { get; set; }

    /// <summary>Transactions stashed until a reconciled state (settled servers).</summary>
    public long Stashed { get; set; }

    /// <summary>Stripes (chains) the administrator added while the load ran.</summary>
    public int StripesAdded { get; set; }

    /// <summary>Chains of the log's last projection.</summary>
    public int FinalChains { get; set; }

    /// <summary>Acknowledged blocks on the chains the administrator added.</summary>
    public int BlocksOnAddedStripes { get; set; }

    /// <summary>Units that died for good and were replaced by new ones.</summary>
    public int UnitsReplaced { get; set; }

    /// <summary>Positions read before a replacement and compared after it.</summary>
    public long PositionsCheckedAcrossReplacements { get; set; }

    private void AddFeatures(SimStats other)
    {
        CounterAddsCommitted += other.CounterAddsCommitted;
        CounterAddsUnknown += other.CounterAddsUnknown;
        CounterReads += other.CounterReads;
        SplitStaged += other.SplitStaged;
        SplitPhasesEnded += other.SplitPhasesEnded;
        SplitReconciledKeys += other.SplitReconciledKeys;
        Stashed += other.Stashed;
        StripesAdded += other.StripesAdded;
        FinalChains += other.FinalChains;
        BlocksOnAddedStripes += other.BlocksOnAddedStripes;
        UnitsReplaced += other.UnitsReplaced;
        PositionsCheckedAcrossReplacements += other.PositionsCheckedAcrossReplacements;
    }

    /// <summary>The counts above that are not zero, for <see cref="ToString"/>.</summary>
    private string FeaturesText =>
        (CounterAddsCommitted + CounterAddsUnknown + SplitStaged > 0
            ? $"; split phases: counter adds ok {CounterAddsCommitted} / info {CounterAddsUnknown}, counter reads {CounterReads}, staged {SplitStaged}, phases {SplitPhasesEnded}, keys reconciled {SplitReconciledKeys}, stashed {Stashed}"
            : "")
        + (StripesAdded > 0 ? $"; stripes added {StripesAdded}, acknowledged blocks on them {BlocksOnAddedStripes}" : "")
        + (UnitsReplaced > 0 ? $"; units replaced {UnitsReplaced}, positions compared across them {PositionsCheckedAcrossReplacements}" : "");
}
