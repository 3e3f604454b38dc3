namespace Hyder.Ycsb.Metrics;

/// <summary>Why a transaction attempt did not commit.</summary>
internal enum AbortCause
{
    /// <summary>A read no longer matches the committed state (PostgreSQL SQLSTATE 40001; optimistic read validation).</summary>
    Serialization,

    /// <summary>Another transaction wrote the same key first (first-committer-wins).</summary>
    WriteConflict,

    /// <summary>PostgreSQL detected a deadlock (SQLSTATE 40P01).</summary>
    Deadlock,

    /// <summary>The target refused the transaction for another reason it reports as retryable.</summary>
    Other,
}

/// <summary>Names of <see cref="AbortCause"/> in reports.</summary>
internal static class AbortCauses
{
    public static readonly int Count = Enum.GetValues<AbortCause>().Length;

    public static string Name(AbortCause cause) => cause switch
    {
        AbortCause.Serialization => "serialization",
        AbortCause.WriteConflict => "write-conflict",
        AbortCause.Deadlock => "deadlock",
        AbortCause.Other => "other",
        _ => throw new ArgumentOutOfRangeException(nameof(cause), cause, null),
    };
}
