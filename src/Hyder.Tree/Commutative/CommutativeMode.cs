namespace Hyder.Tree.Commutative;

/// <summary>How a transaction runs its commutative operations (Add, Max, Min, OPut, TopKInsert).</summary>
public enum CommutativeMode : byte
{
    /// <summary>
    /// Recorded as operations: two of them on one key never conflict, and meld applies them in log
    /// order to the value the key has there (docs/doppel.md).
    /// </summary>
    Operations = 0,

    /// <summary>
    /// The module off: each operation reads the key and writes the result, an ordinary
    /// read-modify-write that conflicts like any other (the side-by-side baseline).
    /// </summary>
    ReadModifyWrite = 1,
}
