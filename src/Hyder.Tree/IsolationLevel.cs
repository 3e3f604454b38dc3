namespace Hyder.Tree;

/// <summary>Isolation levels, chosen per transaction (DESIGN §3). docs/meld.md gives the exact conflict rules.</summary>
public enum IsolationLevel : byte
{
    /// <summary>Reads, absent-key reads and scanned ranges go into the intention; write-write checked.</summary>
    Serializable = 0,

    /// <summary>Reads of present keys go into the intention, no phantom protection; write-write checked.</summary>
    RepeatableRead = 1,

    /// <summary>No read set: write-write conflicts only (first committer wins, by version).</summary>
    SnapshotIsolation = 2,

    /// <summary>No read set and blind writes: nothing aborts; insert checks existence on its snapshot only and overwrites a concurrent insert (docs/meld.md).</summary>
    ReadCommitted = 3,
}
