using FsCheck;
using FsCheck.Fluent;
using Microsoft.FSharp.Core;
using Xunit.Abstractions;

namespace Hyder.Checker.Tests;

/// <summary>
/// Runs FsCheck properties from plain facts (FsCheck.Xunit is not served): a fixed seed, printed,
/// so a failure is reproducible; throws on failure.
/// </summary>
internal static class Properties
{
    public static void Check<T>(ITestOutputHelper output, string name, Gen<T> generator, Func<T, bool> property, int tests, ulong seed)
    {
        output.WriteLine($"{name}: {tests} cases, FsCheck seed {seed}");
        var config = Config.QuickThrowOnFailure
            .WithMaxTest(tests)
            .WithQuietOnSuccess(true)
            .WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(seed), FSharpOption<int>.None)));
        FsCheck.Check.One(name, config, Prop.ForAll(generator.ToArbitrary(), property));
    }
}
