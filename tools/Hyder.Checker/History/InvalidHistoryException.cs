namespace Hyder.Checker;

/// <summary>
/// The history itself is malformed (a completion without an invocation, a value written twice
/// to one key, a file that does not parse): the client or the generator is broken, not the
/// database, so no verdict about the database is possible.
/// </summary>
public sealed class InvalidHistoryException : Exception
{
    /// <summary>Creates the exception.</summary>
    public InvalidHistoryException()
    {
    }

    /// <summary>Creates the exception with a message.</summary>
    public InvalidHistoryException(string message)
        : base(message)
    {
    }

    /// <summary>Creates the exception with a message and a cause.</summary>
    public InvalidHistoryException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
