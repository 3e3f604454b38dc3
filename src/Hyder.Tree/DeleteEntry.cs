namespace Hyder.Tree;

/// <summary>
/// One key an intention deleted, with the content version it deleted (meld paper §6, third
/// approach: a tombstone kept beside the tree, not in it).
/// </summary>
/// <param name="Key">The deleted key.</param>
/// <param name="Scv">NCV of the key in the transaction's snapshot.</param>
/// <param name="Blind">True at read committed: the delete applies whatever the current version is.</param>
public readonly record struct DeleteEntry(byte[] Key, NodeVersion Scv, bool Blind) : IKeyed;

/// <summary>An entry of a list sorted ordinally by key (<see cref="DeleteList.Find"/>).</summary>
internal interface IKeyed
{
    /// <summary>The entry's key.</summary>
    byte[] Key { get; }
}

/// <summary>Lookups in a delete list, or any list of entries sorted ordinally by key (unique).</summary>
internal static class DeleteList
{
    /// <summary>The index of <paramref name="key"/>'s entry, or the complement of where it would go.</summary>
    public static int Find<T>(ReadOnlySpan<T> deletes, byte[] key)
        where T : IKeyed
    {
        int lo = 0, hi = deletes.Length - 1;
        while (lo <= hi)
        {
            var mid = (lo + hi) >>> 1;
            var c = Keys.Compare(deletes[mid].Key, key);
            if (c == 0)
            {
                return mid;
            }

            if (c < 0)
            {
                lo = mid + 1;
            }
            else
            {
                hi = mid - 1;
            }
        }

        return ~lo;
    }
}
