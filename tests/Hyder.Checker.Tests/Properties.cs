using FsCheck;
using FsCheck.Fluent;
using Microsoft.FSharp.Core;
using Xunit.Abstractions;

namespace Hyder.Checker.Tests;

/// <summary>
/// Runs FsCheck over a generator from a plain fact, with a fixed seed, printed: for the tests that
/// measure a rate over the cases (how often the checker catches a broken executor) rather than
/// state a property, which are FsCheck.Xunit's <c>[Property]</c>s.
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
