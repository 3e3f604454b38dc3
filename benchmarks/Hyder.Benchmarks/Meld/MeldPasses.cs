using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// One pass over a log, in log order: the loops the benchmarks and the report time. They return
/// the number of commits so the work cannot be optimized away.
/// </summary>
public static class MeldPasses
{
    /// <summary>Trial-melds every intention against its state.</summary>
    public static int Meld(MeldLog log, MeldOperator op)
    {
        var intentions = log.Intentions;
        var states = log.States;
        var commits = 0;
        for (var i = 0; i < intentions.Length; i++)
        {
            if (op.Trial(intentions[i], states[i]).Committed)
            {
                commits++;
            }
        }

        return commits;
    }

    /// <summary>Trial-melds the whole log <paramref name="times"/> times (benchmarks with a fixed operation count).</summary>
    public static int Meld(MeldLog log, MeldOperator op, int times)
    {
        var commits = 0;
        for (var t = 0; t < times; t++)
        {
            commits += Meld(log, op);
        }

        return commits;
    }

    /// <summary>Decides every intention against its state with meld building nothing (the fair counterpart of brute force).</summary>
    public static int Decide(MeldLog log, MeldOperator op)
    {
        var intentions = log.Intentions;
        var states = log.States;
        var commits = 0;
        for (var i = 0; i < intentions.Length; i++)
        {
            if (op.Decide(intentions[i], states[i]).Committed)
            {
                commits++;
            }
        }

        return commits;
    }

    /// <summary>Validates the whole log <paramref name="times"/> times with the brute-force validator.</summary>
    public static int BruteForce(MeldLog log, BruteForceValidator validator, int times)
    {
        var commits = 0;
        for (var t = 0; t < times; t++)
        {
            commits += BruteForce(log, validator);
        }

        return commits;
    }

    /// <summary>Validates every intention against its state with the brute-force validator.</summary>
    public static int BruteForce(MeldLog log, BruteForceValidator validator)
    {
        var intentions = log.Intentions;
        var states = log.States;
        var commits = 0;
        for (var i = 0; i < intentions.Length; i++)
        {
            if (validator.Validate(intentions[i], states[i]).Committed)
            {
                commits++;
            }
        }

        return commits;
    }
}
