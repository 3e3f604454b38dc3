using Hyder.Tree.Meld;

namespace Hyder.Tree.Pipeline;

/// <summary>The meld pipeline's settings; every server of a cluster must run the same ones.</summary>
/// <param name="PremeldThreads">t: premeld threads (0 turns premeld off); stage thread ids 1..t.</param>
/// <param name="Distance">d: the premeld distance (Hyder II §3.4).</param>
/// <param name="GroupMeld">Pairs intentions 2k−1 and 2k into group intentions (Hyder II §4); stage thread id t + 1.</param>
/// <param name="GroupFirst">
/// With both premeld and group meld, group first and premeld the group (the reference pipeline
/// only); the default premelds first, as Hyder II did, since premeld finds more aborts earlier.
/// </param>
public readonly record struct PipelineOptions(int PremeldThreads = 0, int Distance = 0, bool GroupMeld = false, bool GroupFirst = false)
{
    /// <summary>The group-meld stage thread's id (after the premeld threads; final meld is 0).</summary>
    public byte GroupThreadId => (byte)(PremeldThreads + 1);

    /// <summary>Throws for settings no pipeline can run.</summary>
    public void Validate()
    {
        ArgumentOutOfRangeException.ThrowIfNegative(PremeldThreads);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(PremeldThreads, 253);
        ArgumentOutOfRangeException.ThrowIfNegative(Distance);
        if (GroupFirst && (!GroupMeld || PremeldThreads == 0))
        {
            ThrowHelper.ThrowArgument(nameof(GroupFirst), "grouping first needs both group meld and premeld");
        }
    }

    /// <inheritdoc/>
    public override string ToString() =>
        (PremeldThreads, GroupMeld) switch
        {
            (0, false) => "final meld only",
            (0, true) => "group meld",
            (_, false) => $"premeld t={PremeldThreads} d={Distance}",
            _ => GroupFirst ? $"group meld, then premeld t={PremeldThreads} d={Distance}" : $"premeld t={PremeldThreads} d={Distance}, then group meld",
        };
}

/// <summary>One intention's decision, as a pipeline reports it.</summary>
/// <param name="Ordinal">The intention's number in the log.</param>
/// <param name="Outcome">The decision and the cost of the stage that made it (for a group, shared by both parts).</param>
/// <param name="DecidedBy">The stage whose check decided (final meld for every commit).</param>
public readonly record struct PipelineDecision(long Ordinal, MeldOutcome Outcome, PipelineStage DecidedBy)
{
    /// <summary>True when the intention committed.</summary>
    public bool Committed => Outcome.Committed;
}
