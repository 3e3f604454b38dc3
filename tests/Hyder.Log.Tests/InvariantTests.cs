using System.Diagnostics;
using System.Reflection;
using Hyder.Log.Units;
using Xunit;

namespace Hyder.Log.Tests;

/// <summary>
/// The Debug tier of the log's invariants (Hyder.Log's <c>Invariant</c>): compiled out of
/// Release, a <see cref="LogInvariantException"/> naming the values in Debug. CI runs this
/// project in Release and in Debug (tools/test.sh).
/// </summary>
public sealed class InvariantTests
{
    [Fact]
    public void EveryDebugCheckOfTheLogIsCompiledOutOfRelease()
    {
        var checks = typeof(LogUnit).Assembly.GetTypes()
            .SelectMany(t => t.GetMethods(BindingFlags.Public | BindingFlags.NonPublic | BindingFlags.Static | BindingFlags.Instance | BindingFlags.DeclaredOnly))
            .Where(m => m.Name.StartsWith("Assert", StringComparison.Ordinal))
            .ToList();
        Assert.Contains(checks, m => m.DeclaringType == typeof(LogUnit) && m.Name == "AssertNeverBack");
        Assert.Contains(checks, m => m.DeclaringType == typeof(Invariant) && m.Name == "Assert");
        var kept = checks.Where(m => m.GetCustomAttributes<ConditionalAttribute>().All(c => c.ConditionString != "DEBUG"));
        Assert.Empty(kept.Select(m => $"{m.DeclaringType}.{m.Name}"));
    }

    [Fact]
    public void AFailedCheckNamesItsValuesInDebugOnly()
    {
#if DEBUG
        var e = Assert.Throws<LogInvariantException>(() => Invariant.Assert(7 < 5, "the tail moves back within an epoch", 7, 5));
        Assert.Equal("the tail moves back within an epoch (7, 5)", e.Message);
#else
        Invariant.Assert(7 < 5, "the tail moves back within an epoch", 7, 5);
#endif
    }

    [Fact]
    public async Task ASealAgainAndAnOlderTrimAreAnsweredWithoutTrippingTheSavedMetadataCheck()
    {
        // The Debug check pairs with the unit's own refusals: a seal of an older epoch and a trim
        // below the mark are answered without saving, so the saved metadata never goes back.
        using var unit = LogUnit.Open(new LogUnitOptions { BlockSize = 256 });
        Assert.Equal(LogStatus.Ok, (await unit.SealAsync(3)).Status);
        Assert.Equal(LogStatus.StaleEpoch, (await unit.SealAsync(2)).Status);
        Assert.Equal(LogStatus.Ok, (await unit.PrefixTrimAsync(3, 10)).Status);
        Assert.Equal(LogStatus.Ok, (await unit.PrefixTrimAsync(3, 4)).Status);
        Assert.Equal(LogStatus.Ok, (await unit.SealAsync(3)).Status);
        Assert.Equal(3, unit.Epoch);
    }
}
