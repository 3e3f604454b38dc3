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

    /// <summary>No read set and blind writes: put and delete never abort; insert still checks the key's version.</summary>
    ReadCommitted = 3,
}
