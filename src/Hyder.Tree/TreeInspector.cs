using System.Buffers.Binary;

namespace Hyder.Tree;

/// <summary>
/// Reads a published state whole: its contents, a hash of its physical form (for comparing
/// servers), and a check of the structural invariants.
/// </summary>
public static class TreeInspector
{
    private const ulong FnvOffset = 14695981039346656037UL;
    private const ulong FnvPrime = 1099511628211UL;

    /// <summary>The key-payload pairs of a subtree in key order.</summary>
    public static List<KeyValuePair<byte[], byte[]>> Contents(Node? root)
    {
        var list = new List<KeyValuePair<byte[], byte[]>>();
        var stack = new Stack<Node>();
        var n = root;
        while (n is not null || stack.Count > 0)
        {
            while (n is not null)
            {
                stack.Push(n);
                n = n.Left;
            }

            n = stack.Pop();
            list.Add(new KeyValuePair<byte[], byte[]>(n.Key, n.Payload));
            n = n.Right;
        }

        return list;
    }

    /// <summary>
    /// A hash of the state's physical form: structure, keys, payloads, versions (ephemeral ids
    /// included) and meld metadata. Two servers that melded the same log agree on it.
    /// </summary>
    public static ulong StateHash(Node? root)
    {
        var h = FnvOffset;
        Hash(root, ref h);
        return h;
    }

    private static void Hash(Node? n, ref ulong h)
    {
        Span<byte> buf = stackalloc byte[8 * 3 + 2];
        if (n is null)
        {
            Mix(ref h, [0xFE]);
            return;
        }

        Mix(ref h, [0xFD]);
        Mix(ref h, n.Key);
        Mix(ref h, [0xFC]);
        Mix(ref h, n.Payload);
        BinaryPrimitives.WriteUInt64LittleEndian(buf, n.Vn.Raw);
        BinaryPrimitives.WriteUInt64LittleEndian(buf[8..], n.Ssv.Raw);
        BinaryPrimitives.WriteUInt64LittleEndian(buf[16..], n.Scv.Raw);
        buf[24] = (byte)(n.Flags & ~NodeFlags.Grafted);
        buf[25] = n.Height;
        Mix(ref h, buf);
        Hash(n.Left, ref h);
        Hash(n.Right, ref h);
    }

    private static void Mix(ref ulong h, ReadOnlySpan<byte> data)
    {
        foreach (var b in data)
        {
            h = (h ^ b) * FnvPrime;
        }

        h = (h ^ (ulong)data.Length) * FnvPrime;
    }

    /// <summary>
    /// Checks a published state: keys strictly increasing, exact AVL heights with balance at most 1,
    /// every node versioned, no pooled node, no read-only intention copy (docs/meld.md explains why
    /// a state never holds one), no unapplied operation list (docs/doppel.md). Throws <see cref="InvariantViolationException"/> naming the fault.
    /// </summary>
    public static void ValidateState(Node? root)
    {
        byte[]? previous = null;
        Validate(root, ref previous);
    }

    private static int Validate(Node? n, ref byte[]? previous)
    {
        if (n is null)
        {
            return 0;
        }

        if ((n.Flags & NodeFlags.Pooled) != 0)
        {
            ThrowHelper.ThrowInvariant("a state reaches a node that was returned to a pool");
        }

        var hl = Validate(n.Left, ref previous);
        if (previous is not null && Keys.Compare(previous, n.Key) >= 0)
        {
            ThrowHelper.ThrowInvariant($"keys out of order: {Keys.Format(previous)} before {Keys.Format(n.Key)}");
        }

        previous = n.Key;
        var hr = Validate(n.Right, ref previous);
        var height = Math.Max(hl, hr) + 1;
        if (n.Height != height)
        {
            ThrowHelper.ThrowInvariant($"node {Keys.Format(n.Key)} records height {n.Height}, has {height}");
        }

        if (Math.Abs(hl - hr) > 1)
        {
            ThrowHelper.ThrowInvariant($"node {Keys.Format(n.Key)} is unbalanced ({hl} vs {hr})");
        }

        if (!n.Vn.IsSome || !n.Nsv.IsSome || !n.Ncv.IsSome)
        {
            ThrowHelper.ThrowInvariant($"node {Keys.Format(n.Key)} has no version (vn {n.Vn}, nsv {n.Nsv}, ncv {n.Ncv})");
        }

        if (n.SubtreeIsOnlyReadDependent)
        {
            ThrowHelper.ThrowInvariant($"node {Keys.Format(n.Key)} is a read-only intention copy inside a state");
        }

        if (n.HasOperations)
        {
            ThrowHelper.ThrowInvariant($"node {Keys.Format(n.Key)} holds an operation list inside a state (meld did not apply it)");
        }

        return height;
    }
}
