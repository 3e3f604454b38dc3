namespace Hyder.Tree;

/// <summary>The per-node meld flags of the meld paper §4.2-4.3, plus engine bookkeeping.</summary>
[Flags]
public enum NodeFlags : byte
{
    /// <summary>No flag.</summary>
    None = 0,

    /// <summary>The transaction wrote this node's payload (update or insert).</summary>
    Altered = 1 << 0,

    /// <summary>The transaction read this node's payload and depends on it being unchanged.</summary>
    DependsOn = 1 << 1,

    /// <summary>The transaction depends on the keys of <see cref="Node.DependencyRanges"/> in this subtree being unchanged (phantoms).</summary>
    DependsOnTree = 1 << 2,

    /// <summary>No node in this subtree was altered or restructured: it is in the intention only for reads.</summary>
    SubtreeIsOnlyReadDependent = 1 << 3,

    /// <summary>A write without a write-write check (read committed): the payload replaces whatever is current.</summary>
    BlindWrite = 1 << 4,

    /// <summary>
    /// Transient, during one meld: an intention node that became part of the new state (grafted),
    /// so the intention's garbage walk stops here. Meaningless outside that walk; never hashed.
    /// </summary>
    Grafted = 1 << 5,

    /// <summary>
    /// The payload is an operation list (docs/doppel.md): commutative operations, and any ordinary
    /// write the transaction made around them, that final meld applies to the key's value at the
    /// intention's place in the log. Never in a state; never grafted (no SSV on it or above it).
    /// </summary>
    Operations = 1 << 6,

    /// <summary>Debug and safety: the node is in a pool and must not be reached.</summary>
    Pooled = 1 << 7,
}
