using Hyder.Tree;
using Hyder.Tree.Meld;

namespace Hyder.Benchmarks.Meld;

/// <summary>
/// A pre-generated log ready to be melded again and again: for each timed intention, an identical
/// sealed copy, the last committed state the real meld saw, and the real meld's outcome.
/// </summary>
/// <remarks>
/// Every state and every copy's snapshot stays pinned for the life of the log, so the database
/// reclaims nothing the copies point into. Trial meld leaves copies and states untouched.
/// </remarks>
public sealed class MeldLog
{
    internal MeldLog(MeldWorkload workload, Database database, Intention[] intentions, DatabaseState[] states, MeldOutcome[] expected, long reads, long operations, int readOnlyDropped)
    {
        Workload = workload;
        Database = database;
        Intentions = intentions;
        States = states;
        Expected = expected;
        Reads = reads;
        Operations = operations;
        ReadOnlyDropped = readOnlyDropped;
    }

    /// <summary>The configuration this log was generated for.</summary>
    public MeldWorkload Workload { get; }

    /// <summary>The database the real run melded into (kept alive with its pinned states).</summary>
    public Database Database { get; }

    /// <summary>Sealed copies of the timed intentions, in log order.</summary>
    public Intention[] Intentions { get; }

    /// <summary>The last committed state each copy is melded against (pinned).</summary>
    public DatabaseState[] States { get; }

    /// <summary>What the real meld decided for each timed intention.</summary>
    public MeldOutcome[] Expected { get; }

    /// <summary>Reads in the timed intentions' transactions.</summary>
    public long Reads { get; }

    /// <summary>Operations in the timed intentions' transactions.</summary>
    public long Operations { get; }

    /// <summary>Transactions drawn read-only and left out (they commit on their snapshot without meld).</summary>
    public int ReadOnlyDropped { get; }

    /// <summary>Number of timed intentions.</summary>
    public int Count => Intentions.Length;

    /// <summary>Share of reads among the logged transactions' operations.</summary>
    public double ReadShare => Operations == 0 ? 0 : (double)Reads / Operations;
}
