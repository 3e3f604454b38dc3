namespace Hyder.Tree;

/// <summary>
/// One key an intention deleted, with the content version it deleted (meld paper §6, third
/// approach: a tombstone kept beside the tree, not in it).
/// </summary>
/// <param name="Key">The deleted key.</param>
/// <param name="Scv">NCV of the key in the transaction's snapshot.</param>
/// <param name="Blind">True at read committed: the delete applies whatever the current version is.</param>
public readonly record struct DeleteEntry(byte[] Key, NodeVersion Scv, bool Blind);
