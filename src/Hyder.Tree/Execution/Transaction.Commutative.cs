using Hyder.Tree.Commutative;

namespace Hyder.Tree;

public sealed partial class Transaction
{
    /// <summary>
    /// Adds <paramref name="delta"/> to the 8-byte integer at <paramref name="key"/> (a missing key
    /// counts as 0). With bounds, the result must lie in [<paramref name="min"/>,
    /// <paramref name="max"/>] at the transaction's place in the log, or meld aborts the transaction
    /// (<see cref="Meld.AbortCause.BoundViolated"/>); every Add must stay in the 64-bit range.
    /// Returns nothing: the operation is applied by meld (docs/doppel.md).
    /// </summary>
    public void Add(byte[] key, long delta, long? min = null, long? max = null) => Apply(key, Operation.Add(delta, min, max));

    /// <summary>Replaces the 8-byte integer at <paramref name="key"/> by the larger of it and <paramref name="value"/> (a missing key becomes <paramref name="value"/>).</summary>
    public void Max(byte[] key, long value) => Apply(key, Operation.MaxOf(value));

    /// <summary>Replaces the 8-byte integer at <paramref name="key"/> by the smaller of it and <paramref name="value"/> (a missing key becomes <paramref name="value"/>).</summary>
    public void Min(byte[] key, long value) => Apply(key, Operation.MinOf(value));

    /// <summary>Ordered put: <paramref name="key"/> keeps the (order, value) with the highest order (on a tie, the larger value).</summary>
    public void OPut(byte[] key, long order, byte[] value) => Apply(key, Operation.OPut(order, value));

    /// <summary>Inserts (<paramref name="order"/>, <paramref name="value"/>) into the top-<paramref name="k"/> list at <paramref name="key"/> (one entry per order, the larger value on a tie).</summary>
    public void TopKInsert(byte[] key, int k, long order, byte[] value) => Apply(key, Operation.TopKInsert(k, order, value));

    /// <summary>
    /// One commutative operation. On a key whose value the transaction knows (it wrote or deleted
    /// it, or reads it first in <see cref="CommutativeMode.ReadModifyWrite"/>) it is applied here;
    /// otherwise it joins the key's operation list, which meld applies in log order.
    /// </summary>
    private void Apply(byte[] key, in Operation operation)
    {
        EnsureRunning();
        ValidateKey(key);
        var n = Find(key);
        var own = n is not null && n.Owner == _token;
        if (own && n!.HasOperations && CommutativeMode == CommutativeMode.Operations)
        {
            AppendOperations(key, OperationList.Encode(operation), write: false);
        }
        else if (own && n!.Altered && !n.HasOperations)
        {
            ApplyKnown(key, n.Payload, operation);
        }
        else if (n is null && IsOwnAbsence(key))
        {
            // Deleted by the transaction itself: the value it knows is "absent".
            ApplyKnown(key, null, operation);
        }
        else if (CommutativeMode == CommutativeMode.ReadModifyWrite)
        {
            ApplyKnown(key, ReadForUpdate(key, n), operation);
        }
        else if (n is null)
        {
            // Pending on a key the snapshot does not hold: nothing to check, meld applies it to
            // whatever the key holds at the transaction's place in the log.
            InsertNew(key, OperationList.Encode(operation), NodeFlags.Operations);
            OwnOperationPath(key);
            _hasOperations = true;
        }
        else
        {
            AppendOperations(key, OperationList.Encode(operation), write: false);
        }

        _wrote = true;
    }

    /// <summary>
    /// Applies an operation to a value the transaction knows. If it fails there (a bound crossed,
    /// a value of another type), the transaction will abort wherever it lands in the log: the key
    /// keeps the operation over that value, so meld makes the abort — after the write's own check,
    /// which names a stale read first.
    /// </summary>
    private void ApplyKnown(byte[] key, byte[]? value, in Operation operation)
    {
        var list = OperationList.Encode(operation);
        if (OperationFold.Apply(list, value, out var result) == FoldError.None)
        {
            Put(key, result!);
            return;
        }

        var doomed = OperationList.Encode(value is null ? Operation.Clear() : Operation.Put(value), operation);
        if (Find(key) is null)
        {
            InsertNew(key, doomed, NodeFlags.Operations | WriteFlags(Isolation == IsolationLevel.ReadCommitted));
            OwnOperationPath(key);
            _hasOperations = true;
        }
        else
        {
            AppendOperations(key, doomed, write: true);
        }
    }

    /// <summary>The read of a read-modify-write: what <see cref="TryGet"/> would see and depend on.</summary>
    private byte[]? ReadForUpdate(byte[] key, Node? n)
    {
        RefuseSplitKey(key);
        var view = n is null ? null : ViewOf(n);
        if (view is null)
        {
            AbsentRead(key, n);
        }
        else if (TracksReads)
        {
            ReadMark(key);
        }

        return view;
    }

    /// <summary>
    /// Appends <paramref name="list"/> to the operations of the key's node (making it a node with
    /// operations); <paramref name="write"/> makes it a checked write (blind at read committed).
    /// </summary>
    private void AppendOperations(byte[] key, byte[] list, bool write)
    {
        var n = OwnOperationPath(key);
        n.SetOwnPayload(n.HasOperations ? OperationList.Concat(n.Payload, list) : list);
        n.Flags |= NodeFlags.Operations;
        if (write)
        {
            n.Flags |= WriteFlags(Isolation == IsolationLevel.ReadCommitted);
        }

        _hasOperations = true;
    }

    /// <summary>
    /// Copies the path to <paramref name="key"/> (in the working tree) and clears SSV and the
    /// read-only mark on every node of it: meld must never graft a subtree that holds operations,
    /// since grafting would put an unapplied list into the state (docs/doppel.md).
    /// </summary>
    private Node OwnOperationPath(byte[] key)
    {
        ref var slot = ref _root;
        while (true)
        {
            var n = Own(slot!);
            slot = n;
            n.Flags &= ~NodeFlags.SubtreeIsOnlyReadDependent;
            n.Ssv = NodeVersion.None;
            var c = Keys.Compare(key, n.Key);
            if (c == 0)
            {
                return n;
            }

            slot = ref c < 0 ? ref n.Left : ref n.Right;
        }
    }
}
