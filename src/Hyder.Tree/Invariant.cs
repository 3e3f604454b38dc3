using System.Diagnostics;
using System.Diagnostics.CodeAnalysis;
using System.Runtime.CompilerServices;

namespace Hyder.Tree;

/// <summary>
/// The Debug tier of the engine's invariants (docs/CONTRIBUTING.md, "The invariants and where they
/// are kept"): checks on the hand-offs and orders the code keeps by construction, too frequent or
/// too costly to run in Release. Every method is <c>[Conditional("DEBUG")]</c>: in a Release build
/// the compiler drops the call and its arguments (the message is not even built), so they cost
/// nothing. A failed check throws <see cref="InvariantViolationException"/>, the exception of the
/// always-on tier, rather than calling <see cref="Debug.Assert(bool)"/>: in a .NET test host a
/// failed Debug.Assert ends the process (Environment.FailFast) without naming the test, whereas an
/// exception fails the one test, or the pipeline stage, that broke the invariant.
/// </summary>
internal static class Invariant
{
    /// <summary>Throws <see cref="InvariantViolationException"/> when <paramref name="condition"/> is false (Debug builds only).</summary>
    [Conditional("DEBUG")]
    public static void Assert([DoesNotReturnIf(false)] bool condition, string message)
    {
        if (!condition)
        {
            ThrowHelper.ThrowInvariant(message);
        }
    }

    /// <summary>
    /// Throws <see cref="InvariantViolationException"/> when <paramref name="condition"/> is false
    /// (Debug builds only); the interpolated message is formatted only then.
    /// </summary>
    [Conditional("DEBUG")]
    public static void Assert([DoesNotReturnIf(false)] bool condition, [InterpolatedStringHandlerArgument(nameof(condition))] ref Message message)
    {
        if (!condition)
        {
            ThrowHelper.ThrowInvariant(message.ToStringAndClear());
        }
    }

    /// <summary>An invariant's message, formatted only when the check fails.</summary>
    [InterpolatedStringHandler]
    public ref struct Message
    {
        private DefaultInterpolatedStringHandler _text;

        /// <summary>Starts formatting when <paramref name="condition"/> is false.</summary>
        public Message(int literalLength, int formattedCount, bool condition, out bool shouldAppend)
        {
            shouldAppend = !condition;
            _text = shouldAppend ? new DefaultInterpolatedStringHandler(literalLength, formattedCount) : default;
        }

        /// <summary>Appends literal text.</summary>
        public void AppendLiteral(string value) => _text.AppendLiteral(value);

        /// <summary>Appends a value.</summary>
        public void AppendFormatted<T>(T value) => _text.AppendFormatted(value);

        /// <summary>The message.</summary>
        public string ToStringAndClear() => _text.ToStringAndClear();
    }
}
