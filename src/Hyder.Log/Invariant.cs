using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Globalization;

namespace Hyder.Log;

/// <summary>
/// The Debug tier of the log's invariants (docs/CONTRIBUTING.md, "The invariants and where they
/// are kept"): pair assertions on what the units and the sequencer keep by construction
/// (write-once slots, seals and trim marks that never go back, a tail that only grows within an
/// epoch). Every method is <c>[Conditional("DEBUG")]</c>, so a Release build drops the calls and
/// their arguments. A failed check throws <see cref="LogInvariantException"/> rather than calling
/// <see cref="Debug.Assert(bool)"/>, which ends a .NET test host without naming the test.
/// </summary>
internal static class Invariant
{
    /// <summary>Throws <see cref="LogInvariantException"/> when <paramref name="condition"/> is false (Debug builds only).</summary>
    [Conditional("DEBUG")]
    public static void Assert([DoesNotReturnIf(false)] bool condition, string message)
    {
        if (!condition)
        {
            Fail(message);
        }
    }

    /// <summary>
    /// Throws <see cref="LogInvariantException"/> when <paramref name="condition"/> is false (Debug
    /// builds only), with the two values that broke it after the message.
    /// </summary>
    [Conditional("DEBUG")]
    public static void Assert([DoesNotReturnIf(false)] bool condition, string message, long first, long second)
    {
        if (!condition)
        {
            Fail(string.Create(CultureInfo.InvariantCulture, $"{message} ({first}, {second})"));
        }
    }

    [DoesNotReturn]
    private static void Fail(string message) => throw new LogInvariantException(message);
}

/// <summary>A Debug-build invariant of the log failed (<see cref="Invariant"/>): a bug, never a status to handle.</summary>
internal sealed class LogInvariantException : Exception
{
    /// <summary>Creates the exception.</summary>
    public LogInvariantException(string message) : base(message) { }
}
