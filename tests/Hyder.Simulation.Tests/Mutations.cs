using Hyder.Simulation.Cluster;

namespace Hyder.Simulation.Tests;

/// <summary>A planted bug run over seeds 1..n: in how many seeds the invariants caught it, and the first failure's description.</summary>
internal static class Mutations
{
    public static (int Caught, string? Example) Run(int seeds, Func<int, SimOptions> options)
    {
        var caught = 0;
        string? example = null;
        for (var seed = 1; seed <= seeds; seed++)
        {
            var result = Simulation.Run(options(seed));
            if (!result.Passed)
            {
                caught++;
                example ??= result.Describe();
            }
        }

        return (caught, example);
    }
}
