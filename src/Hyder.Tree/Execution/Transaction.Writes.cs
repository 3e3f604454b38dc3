using Hyder.Tree.Commutative;

namespace Hyder.Tree;

public sealed partial class Transaction
{
    /// <summary>Writes a key (insert or update).</summary>
    public void Put(byte[] key, byte[] payload)
    {
        EnsureRunning();
        ValidateKey(key);
        ArgumentNullException.ThrowIfNull(payload);
        RefuseSplitKey(key);
        var blind = Isolation == IsolationLevel.ReadCommitted;
        if (Find(key) is not null)
        {
            Update(key, payload, blind);
        }
        else
        {
            InsertNew(key, payload, WriteFlags(blind));
        }

        _wrote = true;
    }

    /// <summary>Inserts a key that must not exist; false (and no change) when it does.</summary>
    public bool Insert(byte[] key, byte[] payload)
    {
        EnsureRunning();
        ValidateKey(key);
        ArgumentNullException.ThrowIfNull(payload);
        RefuseSplitKey(key);
        var blind = Isolation == IsolationLevel.ReadCommitted;
        var found = Find(key);
        if (found is not null && ViewOf(found) is not null)
        {
            if (TracksReads)
            {
                ReadMark(key);
            }

            return false;
        }

        if (found is not null)
        {
            // A key whose operations end with the transaction's own delete: a write after them.
            Update(key, payload, blind);
        }
        else
        {
            // The insert saw the snapshot's absence unless the key is absent by the transaction's
            // own delete. At serializable that is a read, kept even if the insert is deleted again.
            var observed = Isolation == IsolationLevel.Serializable && !IsOwnAbsence(key);

            // Read committed never aborts: even an insert overwrites a concurrent insert (docs/meld.md).
            InsertNew(key, payload, WriteFlags(blind));
            if (observed)
            {
                MarkCreationObserved(key);
            }
        }

        _wrote = true;
        return true;
    }

    /// <summary>Deletes a key; false when it does not exist.</summary>
    public bool Delete(byte[] key)
    {
        EnsureRunning();
        ValidateKey(key);
        RefuseSplitKey(key);
        var found = Find(key);
        if (found is null || ViewOf(found) is null)
        {
            AbsentRead(key, found);
            return false;
        }

        if (found.HasOperations)
        {
            // The operations before it still apply (their bounds are checked); the node stays, and
            // meld removes the key after applying the list.
            AppendOperations(key, OperationList.Encode(Operation.Clear()), write: true);
        }
        else
        {
            _root = DeleteRec(_root!, key);
        }

        _wrote = true;
        return true;
    }

    /// <summary>
    /// Copies the path from the root to <paramref name="key"/> into the intention without changing
    /// any content (meld paper §5, flush intentions): the copies are structural, so a meld that
    /// finds the path unchanged grafts them and the state's ephemeral nodes there are replaced by
    /// these, which the log holds. Reads nothing and writes nothing, so it never conflicts; false
    /// when the key is absent.
    /// </summary>
    public bool Flush(byte[] key)
    {
        EnsureRunning();
        ValidateKey(key);
        if (Find(key) is null)
        {
            return false;
        }

        ref var slot = ref _root;
        var prefix = Keys.Prefix(key);
        while (true)
        {
            var n = Own(slot!);
            slot = n;
            n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
            var c = Keys.Compare(key, prefix, n);
            if (c == 0)
            {
                _wrote = true;
                return true;
            }

            slot = ref c < 0 ? ref n.Left : ref n.Right;
        }
    }

    private void Update(byte[] key, byte[] payload, bool blind)
    {
        ref var slot = ref _root;
        var prefix = Keys.Prefix(key);
        while (true)
        {
            var n = Own(slot!);
            slot = n;
            n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
            var c = Keys.Compare(key, prefix, n);
            if (c == 0)
            {
                // After operations on the key, the write joins their list (docs/doppel.md).
                if (n.HasOperations)
                {
                    n.SetOwnPayload(OperationList.Append(n.Payload, Operation.Put(payload)));
                }
                else
                {
                    SetWritten(n, payload);
                }

                n.Flags |= WriteFlags(blind);
                return;
            }

            slot = ref c < 0 ? ref n.Left : ref n.Right;
        }
    }

    /// <summary>
    /// Gives a node the value written: a copy in an array from the database's value pool when it
    /// recycles values (the caller's array is the caller's again), otherwise the caller's array.
    /// </summary>
    private void SetWritten(Node n, byte[] payload)
    {
        if (_database.Values is { } values)
        {
            n.Payload = values.Copy(payload, out n.PayloadFromPool);
        }
        else
        {
            n.SetOwnPayload(payload);
        }
    }

    private static NodeFlags WriteFlags(bool blind) => NodeFlags.Altered | (blind ? NodeFlags.BlindWrite : NodeFlags.None);

    private void InsertNew(byte[] key, byte[] payload, NodeFlags flags)
    {
        // Re-inserting a key this transaction deleted is an update of the snapshot's version.
        var scv = NodeVersion.None;
        if (_deletes is not null)
        {
            var at = FindDelete(key);
            if (at >= 0)
            {
                scv = _deletes[at].Scv;
                _deletes.RemoveAt(at);
            }
        }

        if (!scv.IsSome)
        {
            Created(key);
        }

        _root = InsertRec(_root, key, payload, flags, scv, out _);
    }

    private Node InsertRec(Node? t, byte[] key, byte[] payload, NodeFlags flags, NodeVersion scv, out int directions)
    {
        if (t is null)
        {
            var leaf = Make();
            leaf.Key = key;
            if ((flags & NodeFlags.Operations) != 0)
            {
                leaf.SetOwnPayload(payload);
            }
            else
            {
                SetWritten(leaf, payload);
            }
            leaf.Flags = flags;
            leaf.Scv = scv;
            leaf.Ssv = NodeVersion.None;
            leaf.Owner = _token;
            leaf.Height = 1;
            directions = 0;
            return leaf;
        }

        var n = Own(t);
        n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
        if (Keys.Compare(key, n.Key) < 0)
        {
            n.Left = InsertRec(n.Left, key, payload, flags, scv, out directions);
            directions |= 1;
        }
        else
        {
            n.Right = InsertRec(n.Right, key, payload, flags, scv, out directions);
            directions |= 2;
        }

        // The new key is this subtree's new smallest or largest key: its key span grew, so it
        // no longer covers the same range as its source and must never be grafted in its place
        // (meld paper, Theorem 3).
        if (directions != 3)
        {
            n.Ssv = NodeVersion.None;
        }

        return Rebalance(n);
    }

    private Node? DeleteRec(Node t, byte[] key)
    {
        var n = Own(t);
        n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
        var c = Keys.Compare(key, n.Key);
        if (c < 0)
        {
            n.Left = DeleteRec(n.Left!, key);
            return Rebalance(n);
        }

        if (c > 0)
        {
            n.Right = DeleteRec(n.Right!, key);
            return Rebalance(n);
        }

        if (n.Scv.IsSome)
        {
            AddDelete(new DeleteEntry(n.Key, n.Scv, Isolation == IsolationLevel.ReadCommitted));
        }
        else if (CreationObserved(n.Key))
        {
            // The transaction's own insert goes, and with it the write that carried the insert's
            // check that the key was absent: the check stays as a point range (docs/meld.md).
            (_ranges ??= []).Add(KeyRange.Closed(n.Key, n.Key));
        }

        Node? replacement;
        if (n.Left is null)
        {
            replacement = n.Right;
        }
        else if (n.Right is null)
        {
            replacement = n.Left;
        }
        else
        {
            var rest = RemoveMin(n.Right, out var successor);
            successor.Left = n.Left;
            successor.Right = rest;

            // The successor moved: its subtree is new.
            successor.Ssv = NodeVersion.None;
            replacement = Rebalance(successor);
        }

        _pool.Return(n);
        return replacement;
    }

    private Node? RemoveMin(Node t, out Node min)
    {
        var n = Own(t);
        n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
        if (n.Left is null)
        {
            min = n;
            return n.Right;
        }

        n.Left = RemoveMin(n.Left, out min);

        // This subtree lost a key that was not deleted (it moved up): not its source's any more.
        n.Ssv = NodeVersion.None;
        return Rebalance(n);
    }

    private Node Rebalance(Node n)
    {
        n.FixHeight();
        var balance = Node.HeightOf(n.Left) - Node.HeightOf(n.Right);
        if (balance > 1)
        {
            var l = Own(n.Left!);
            n.Left = l;
            if (Node.HeightOf(l.Left) < Node.HeightOf(l.Right))
            {
                n.Left = RotateLeft(l);
            }

            return RotateRight(n);
        }

        if (balance < -1)
        {
            var r = Own(n.Right!);
            n.Right = r;
            if (Node.HeightOf(r.Right) < Node.HeightOf(r.Left))
            {
                n.Right = RotateRight(r);
            }

            return RotateLeft(n);
        }

        return n;
    }

    private Node RotateRight(Node x)
    {
        var y = Own(x.Left!);
        x.Left = y.Right;
        y.Right = x;
        Restructured(x);
        Restructured(y);
        x.FixHeight();
        y.FixHeight();
        return y;
    }

    private Node RotateLeft(Node x)
    {
        var y = Own(x.Right!);
        x.Right = y.Left;
        y.Left = x;
        Restructured(x);
        Restructured(y);
        x.FixHeight();
        y.FixHeight();
        return y;
    }

    /// <summary>A rotated node's subtree holds other keys than its source's.</summary>
    private static void Restructured(Node n)
    {
        n.Ssv = NodeVersion.None;
        n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
    }

    private void AddDelete(DeleteEntry entry)
    {
        _deletes ??= [];
        var at = FindDelete(entry.Key);
        if (at >= 0)
        {
            ThrowHelper.ThrowInvariant($"key {Keys.Format(entry.Key)} deleted twice by one transaction");
        }

        _deletes.Insert(~at, entry);
    }

    private int FindDelete(byte[] key) => DeleteList.Find(System.Runtime.InteropServices.CollectionsMarshal.AsSpan(_deletes), key);
}
