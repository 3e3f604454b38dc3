using FsCheck;
using FsCheck.Fluent;
using Microsoft.FSharp.Core;
using Xunit.Abstractions;

namespace Hyder.Log.Tests;

/// <summary>
/// Runs FsCheck properties from plain facts (FsCheck.Xunit is not served): a fixed seed, printed,
/// so a failure is reproducible; throws on failure. Runs off xUnit's synchronization context so
/// properties may block on the log's async calls.
/// </summary>
internal static class Properties
{
    public static void Check<T>(ITestOutputHelper output, string name, Gen<T> generator, Func<T, bool> property, int tests = 100, ulong seed = 0x5EED_0F_4B1D)
    {
        output.WriteLine($"{name}: {tests} cases, seed {seed}");
        var config = Config.QuickThrowOnFailure
            .WithMaxTest(tests)
            .WithQuietOnSuccess(true)
            .WithReplay(FSharpOption<Replay>.Some(new Replay(new Rnd(seed), FSharpOption<int>.None)));
        var run = Task.Run(() => FsCheck.Check.One(name, config, Prop.ForAll(generator.ToArbitrary(), property)));
        run.GetAwaiter().GetResult();
    }
}
