namespace Hyder.Fuzz.Engine;

/// <summary>One case: the seed it started from, the mutations applied and the bytes they made.</summary>
/// <param name="Number">The case number; with the run's seed it fixes everything else.</param>
/// <param name="Origin">The corpus entry mutated.</param>
/// <param name="Input">The bytes the decoder gets.</param>
/// <param name="Steps">What was done, in order.</param>
public sealed record FuzzCase(long Number, Seed Origin, byte[] Input, IReadOnlyList<string> Steps)
{
    /// <summary>The most mutations stacked on one case.</summary>
    public const int MaxSteps = 8;

    /// <summary>
    /// Case <paramref name="number"/> of a run seeded with <paramref name="seed"/>: a corpus entry,
    /// one to <see cref="MaxSteps"/> mutations, and for half the cases of a target with
    /// checksums, the checksums recomputed so the parser behind them is reached.
    /// </summary>
    public static FuzzCase Build(FuzzTarget target, ulong seed, long number)
    {
        var random = FuzzRandom.ForCase(seed, number);
        var corpus = target.Corpus;
        var origin = random.Pick(corpus);
        var count = random.OneIn(2) ? 1 : random.Next(2, random.OneIn(3) ? MaxSteps + 1 : 4);
        var steps = new List<string>(count + 1);
        var input = origin.Bytes;
        for (var i = 0; i < count; i++)
        {
            input = Mutator.MutateOnce(input, random, origin, corpus, out var step);
            steps.Add(step);
        }

        if (target.HasFixup && random.OneIn(2))
        {
            input = (byte[])input.Clone();
            target.Fixup(input, origin);
            steps.Add("recompute checksums");
        }

        return new FuzzCase(number, origin, input, steps);
    }
}
