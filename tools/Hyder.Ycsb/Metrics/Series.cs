namespace Hyder.Ycsb.Metrics;

/// <summary>What a latency sample measures: one kind of operation, the commit call, or a whole transaction.</summary>
internal enum Series
{
    Read,
    Update,
    Insert,
    Scan,
    ReadModifyWrite,
    Delete,
    Add,

    /// <summary>The commit call of an attempt, committed or not.</summary>
    Commit,

    /// <summary>A transaction from its first begin to its outcome, retries included.</summary>
    Transaction,
}

/// <summary>Names of <see cref="Series"/> as YCSB's reports spell them.</summary>
internal static class SeriesNames
{
    public static readonly int Count = Enum.GetValues<Series>().Length;

    public static string ReportName(Series series) => series switch
    {
        Series.Read => "READ",
        Series.Update => "UPDATE",
        Series.Insert => "INSERT",
        Series.Scan => "SCAN",
        Series.ReadModifyWrite => "READ-MODIFY-WRITE",
        Series.Delete => "DELETE",
        Series.Add => "ADD",
        Series.Commit => "COMMIT",
        Series.Transaction => "TRANSACTION",
        _ => throw new ArgumentOutOfRangeException(nameof(series), series, null),
    };
}
