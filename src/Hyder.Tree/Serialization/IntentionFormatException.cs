namespace Hyder.Tree.Serialization;

/// <summary>
/// A block, an intention or a checkpoint read from the log is malformed: a bad header or checksum,
/// a truncated or inconsistent field, a reference that does not resolve. The message names the
/// fault and depends only on the bytes and the snapshot, so every server reports the same one.
/// </summary>
public sealed class IntentionFormatException : Exception
{
    /// <summary>Creates the exception.</summary>
    public IntentionFormatException(string message) : base(message) { }

    /// <summary>Creates the exception with the fault that caused it.</summary>
    public IntentionFormatException(string message, Exception inner) : base(message, inner) { }

    /// <summary>Creates the exception with no message (prefer the other constructors).</summary>
    public IntentionFormatException() : base("malformed intention or block") { }
}
