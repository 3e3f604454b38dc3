using System.Runtime.InteropServices;

namespace Hyder.Tree;

/// <summary>
/// What the transaction knows of keys its snapshot lacks and it wrote itself. A key it created
/// and deleted again leaves no node and no delete entry, yet its absence is then the transaction's
/// own doing: a later miss observes nothing of the snapshot, a later operation applies to a value
/// it knows (absent), and an insert that saw the snapshot's absence at serializable must keep that
/// check once no write is left to carry it (docs/meld.md, "The executor").
/// </summary>
public sealed partial class Transaction
{
    /// <summary>
    /// Keys the snapshot lacks that this transaction created (by insert, put or operation), sorted
    /// ordinally, with whether the creation observed the snapshot's absence (a serializable
    /// <see cref="Insert"/>). Entries are never removed: the key stays the transaction's own.
    /// </summary>
    private struct CreatedKey(byte[] key) : IKeyed
    {
        public bool Observed;

        public readonly byte[] Key { get; } = key;
    }

    /// <summary>Records that the transaction created <paramref name="key"/>, which its snapshot lacks.</summary>
    private void Created(byte[] key)
    {
        _created ??= [];
        var at = FindCreated(key);
        if (at < 0)
        {
            _created.Insert(~at, new CreatedKey(key));
        }
    }

    /// <summary>Marks <paramref name="key"/>'s creation as having observed the snapshot's absence.</summary>
    private void MarkCreationObserved(byte[] key)
    {
        var at = FindCreated(key);
        if (at < 0)
        {
            ThrowHelper.ThrowInvariant($"key {Keys.Format(key)} marked observed but never created");
        }

        CollectionsMarshal.AsSpan(_created)[at].Observed = true;
    }

    /// <summary>True when the transaction's creation of <paramref name="key"/> observed the snapshot's absence.</summary>
    private bool CreationObserved(byte[] key)
    {
        var at = FindCreated(key);
        return at >= 0 && _created![at].Observed;
    }

    /// <summary>
    /// True when <paramref name="key"/>, absent from the working tree, is absent by the
    /// transaction's own delete (of a snapshot key, or of a key it created).
    /// </summary>
    private bool IsOwnAbsence(byte[] key) =>
        (_deletes is not null && FindDelete(key) >= 0) || FindCreated(key) >= 0;

    /// <summary>
    /// A get, delete or read-for-update found <paramref name="key"/> absent (<paramref name="found"/>:
    /// its working-tree node, if any). At serializable the absence is a read — a later insert of
    /// the key is a phantom — unless the transaction made it itself and saw nothing of the snapshot.
    /// </summary>
    private void AbsentRead(byte[] key, Node? found)
    {
        if (Isolation == IsolationLevel.Serializable && (found is not null || !IsOwnAbsence(key)))
        {
            (_ranges ??= []).Add(KeyRange.Closed(key, key));
        }
    }

    private int FindCreated(byte[] key) => _created is null ? -1 : DeleteList.Find<CreatedKey>(CollectionsMarshal.AsSpan(_created), key);
}
