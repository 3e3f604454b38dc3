namespace Hyder.Tree.Pipeline;

/// <summary>
/// Hyder II Algorithm 1, the part every server must compute alike: which premeld thread takes an
/// intention and which committed state it premelds against.
/// </summary>
/// <param name="Threads">t: premeld threads.</param>
/// <param name="Distance">d: the premeld distance.</param>
/// <param name="Start">The ordinal the pipeline starts after: older states are not available.</param>
/// <param name="PerPair">
/// Group meld runs first: the unit premelded is pair k (ordinals 2k − 1 and 2k, named by 2k),
/// taken by thread k mod t against the state after pair k − t·d − 1.
/// </param>
public readonly record struct PremeldSchedule(int Threads, int Distance, long Start, bool PerPair = false)
{
    /// <summary>The premeld thread (0-based) of intention <paramref name="ordinal"/>; its stage thread id is this plus 1.</summary>
    public int ThreadOf(long ordinal) => (int)((PerPair ? ordinal / 2 : ordinal) % Threads);

    /// <summary>
    /// m = v − t·d − 1 (per pair: 2k − 2·t·d − 1): the ordinal of the state intention
    /// <paramref name="ordinal"/> premelds against. With group meld a state exists only after a
    /// whole pair, so the state "after" an odd m is the one after m − 1.
    /// </summary>
    public long InputOf(long ordinal) => ordinal - ((PerPair ? 2L : 1L) * Threads * Distance) - 1;

    /// <summary>True when the pipeline holds the state after <paramref name="ordinal"/> for a premeld.</summary>
    public bool Retains(long ordinal) => Threads > 0 && ordinal >= Start;

    /// <summary>
    /// True when intention <paramref name="ordinal"/> whose newest snapshot is
    /// <paramref name="snapshotSequence"/> is premelded against <paramref name="input"/>, the state
    /// as of <see cref="InputOf"/>: only if that state is newer than the snapshot (else there is
    /// nothing to do).
    /// </summary>
    public bool Applies(long ordinal, long snapshotSequence, DatabaseState input) =>
        InputOf(ordinal) > snapshotSequence && input.Sequence > snapshotSequence;
}
