namespace Hyder.Tree.Serialization;

/// <summary>
/// Which nodes an encoding writes as records ("inside"): those whose <see cref="Node.Owner"/> lies
/// in [<see cref="Low"/>, <see cref="High"/>]. A struct rather than a delegate, because the encoder
/// asks it several times for every node of every intention.
/// </summary>
internal readonly record struct OwnerRange(long Low, long High)
{
    /// <summary>Every node: a checkpoint writes the whole state.</summary>
    public static OwnerRange All => new(long.MinValue, long.MaxValue);

    /// <summary>
    /// The inside nodes of <paramref name="intention"/>: sealed, those of its ordinals; unsealed,
    /// those its transaction owns (the seal gives exactly those the ordinal).
    /// </summary>
    public static OwnerRange Of(Intention intention) =>
        intention.IsSealed ? new(intention.FirstOrdinal, intention.Ordinal) : new(intention.ExecutorToken, intention.ExecutorToken);

    public bool Contains(Node node) => node.Owner >= Low && node.Owner <= High;
}
