namespace Hyder.Log;

/// <summary>A log request failed with a status the caller has to handle (trimmed, wrong block size, …).</summary>
public class SharedLogException : Exception
{
    /// <summary>Creates the exception for <paramref name="status"/> at <paramref name="address"/>.</summary>
    public SharedLogException(LogStatus status, long address, string message)
        : base(message)
    {
        Status = status;
        Address = address;
    }

    /// <summary>Creates an exception without a status (for serializers and tooling).</summary>
    public SharedLogException()
        : this(LogStatus.Failed, -1, "The shared log request failed.")
    {
    }

    /// <summary>Creates an exception with a message.</summary>
    public SharedLogException(string message)
        : this(LogStatus.Failed, -1, message)
    {
    }

    /// <summary>Creates an exception with a message and an inner exception.</summary>
    public SharedLogException(string message, Exception innerException)
        : base(message, innerException)
    {
        Status = LogStatus.Failed;
        Address = -1;
    }

    /// <summary>The status that failed the request.</summary>
    public LogStatus Status { get; }

    /// <summary>The log address concerned, or -1.</summary>
    public long Address { get; }
}

/// <summary>Stored data failed a checksum or an invariant that protects it; it is never returned as data.</summary>
public sealed class LogCorruptionException : SharedLogException
{
    /// <summary>Creates the exception.</summary>
    public LogCorruptionException(string message)
        : base(LogStatus.Corrupt, -1, message)
    {
    }

    /// <summary>Creates the exception for an address.</summary>
    public LogCorruptionException(long address, string message)
        : base(LogStatus.Corrupt, address, message)
    {
    }

    /// <summary>Creates the exception.</summary>
    public LogCorruptionException()
        : base(LogStatus.Corrupt, -1, "Stored log data is corrupt.")
    {
    }

    /// <summary>Creates the exception with an inner exception.</summary>
    public LogCorruptionException(string message, Exception innerException)
        : base(message, innerException)
    {
    }
}
