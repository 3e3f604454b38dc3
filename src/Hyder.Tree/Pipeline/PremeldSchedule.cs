namespace Hyder.Tree.Pipeline;

/// <summary>
/// Hyder II Algorithm 1, the part every server must compute alike: which premeld thread takes an
/// intention and which committed state it premelds against.
/// </summary>
/// <param name="Threads">t: premeld threads.</param>
/// <param name="Distance">d: the premeld distance.</param>
/// <param name="Start">The ordinal the pipeline starts after: older states are not available.</param>
public readonly record struct PremeldSchedule(int Threads, int Distance, long Start)
{
    /// <summary>The premeld thread (0-based) of intention <paramref name="ordinal"/>; its stage thread id is this plus 1.</summary>
    public int ThreadOf(long ordinal) => (int)(ordinal % Threads);

    /// <summary>m = v − t·d − 1: the ordinal of the state intention <paramref name="ordinal"/> premelds against.</summary>
    public long InputOf(long ordinal) => ordinal - ((long)Threads * Distance) - 1;

    /// <summary>True when the pipeline holds the state after <paramref name="ordinal"/> for a premeld.</summary>
    public bool Retains(long ordinal) => Threads > 0 && ordinal >= Start;

    /// <summary>
    /// True when intention <paramref name="ordinal"/> with snapshot <paramref name="snapshotSequence"/>
    /// is premelded against <paramref name="input"/>, the state after <see cref="InputOf"/>: only if
    /// that state is newer than the snapshot (else there is nothing to do).
    /// </summary>
    public bool Applies(long ordinal, long snapshotSequence, DatabaseState input) =>
        InputOf(ordinal) > snapshotSequence && input.Sequence > snapshotSequence;
}
