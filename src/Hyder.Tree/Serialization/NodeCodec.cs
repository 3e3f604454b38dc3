using System.Runtime.CompilerServices;

namespace Hyder.Tree.Serialization;

/// <summary>
/// The node record shared by intentions and checkpoints, and the version and range encodings
/// (docs/intention-format.md, "Node record").
/// </summary>
internal static class NodeCodec
{
    /// <summary>Reference kinds (two bits each in the shape byte).</summary>
    public const byte RefNull = 0, RefInside = 1, RefPersistent = 2, RefEphemeral = 3;

    /// <summary>Version kinds: none, SSV equal to SCV (SSV only), persistent, ephemeral.</summary>
    public const byte VersionNone = 0, VersionSameAsScv = 1;

    /// <summary>Flag-byte bit of an intention node copied from a snapshot node of the same key (Node.Source).</summary>
    public const byte CopiedBit = 1 << 5;

    /// <summary>
    /// Flags-byte bit of an intention record: a copied node the transaction did not alter, whose
    /// payload is not written — it is its source's (the snapshot node with its key), which the
    /// decoder finds anyway. Read paths at serializable cost keys and versions, not payloads.
    /// </summary>
    public const byte PayloadFromSourceBit = 1 << 6;

    /// <summary>
    /// Flags-byte bit of an intention record (format 3): the payload is an operation list
    /// (<see cref="NodeFlags.Operations"/>; docs/doppel.md). Never in a checkpoint: a state holds none.
    /// </summary>
    public const byte OperationsBit = 1 << 7;

    /// <summary>
    /// The payload a decoded node has until its source is found (a distinct array, compared by
    /// reference; a raw image keeps it, so a checkpoint never takes a payload from such a node).
    /// </summary>
#pragma warning disable CA1825 // Must be its own instance: Array.Empty is what a decoded empty payload may be.
    public static readonly byte[] OmittedPayload = new byte[0];
#pragma warning restore CA1825

    /// <summary>The meld flags a record carries, in their <see cref="NodeFlags"/> bit positions.</summary>
    public const NodeFlags StoredFlags =
        NodeFlags.Altered | NodeFlags.DependsOn | NodeFlags.DependsOnTree | NodeFlags.SubtreeIsOnlyReadDependent | NodeFlags.BlindWrite;

    /// <summary>Smallest record: flags, shape, key length, one key byte, payload length, height.</summary>
    public const int MinNodeBytes = 6;

    public static byte VersionKind(NodeVersion v) => !v.IsSome ? VersionNone : v.IsEphemeral ? RefEphemeral : RefPersistent;

    public static void WriteVersion(ByteWriter w, NodeVersion v, PositionIndex table) =>
        w.Advance(PutVersion(w.Reserve(MaxVersionBytes), 0, v, table));

    public static NodeVersion ReadVersion(ref ByteReader r, byte kind, long[] table, string field)
    {
        switch (kind)
        {
            case RefPersistent:
                if (table.Length == 0)
                {
                    r.Fail($"{field} names a log position but the position table is empty");
                }

                var at = r.Int($"{field} position-table index", table.Length - 1);
                var index = r.Int($"{field} node index", NodeVersion.MaxIndex);
                return NodeVersion.Persistent(table[at], index);
            case RefEphemeral:
                var thread = r.Byte($"{field} thread id");
                var sequence = r.Varint($"{field} sequence", (1UL << NodeVersion.SequenceBits) - 1);
                return NodeVersion.Ephemeral(thread, (long)sequence);
            default:
                return NodeVersion.None;
        }
    }

    /// <summary>Writes the sorted, distinct positions as deltas (<see cref="PositionTable.Seal"/>, <see cref="WriteOrderPositions.Seal"/>).</summary>
    public static void WritePositionTable(ByteWriter w, ReadOnlySpan<long> sorted)
    {
        w.Varint((ulong)sorted.Length);
        long previous = 0;
        foreach (var p in sorted)
        {
            w.Varint((ulong)(p - previous));
            previous = p;
        }
    }

    public static long[] ReadPositionTable(ref ByteReader r)
    {
        var n = r.Count("position-table size", 1);
        var table = new long[n];
        long previous = 0;
        for (var i = 0; i < n; i++)
        {
            var delta = r.Varint("position-table entry", (ulong)NodeVersion.MaxPosition);
            if (delta == 0)
            {
                r.Fail($"position-table entry {i} does not increase");
            }

            previous += (long)delta;
            if (previous > NodeVersion.MaxPosition)
            {
                r.Fail($"position-table entry {i} ({previous}) exceeds the largest log position {NodeVersion.MaxPosition}");
            }

            table[i] = previous;
        }

        return table;
    }

    public static void WriteRanges(ByteWriter w, KeyRange[] ranges)
    {
        w.Varint((ulong)ranges.Length);
        foreach (var range in ranges)
        {
            w.Byte((byte)((range.Low is null ? 0 : 1) | (range.LowInclusive ? 2 : 0) | (range.High is null ? 0 : 4) | (range.HighInclusive ? 8 : 0)));
            if (range.Low is not null)
            {
                w.Bytes(range.Low);
            }

            if (range.High is not null)
            {
                w.Bytes(range.High);
            }
        }
    }

    public static KeyRange[] ReadRanges(ref ByteReader r, bool atLeastOne)
    {
        var n = r.Count("range count", 1);
        if (atLeastOne && n == 0)
        {
            r.Fail("DependsOnTree is set but there are no dependency ranges");
        }

        if (n == 0)
        {
            return [];
        }

        var ranges = new KeyRange[n];
        for (var i = 0; i < n; i++)
        {
            var f = r.Byte("range bounds");
            // An open bound may still carry its inclusive bit (the executor's scans make closed
            // ranges with null ends); the bit means nothing then, but it is kept exactly.
            if ((f & ~0xF) != 0)
            {
                r.Fail($"range {i} has invalid bound bits {f:X2}");
            }

            var low = (f & 1) != 0 ? r.Bytes("range low key") : null;
            var high = (f & 4) != 0 ? r.Bytes("range high key") : null;
            ranges[i] = new KeyRange(low, (f & 2) != 0, high, (f & 8) != 0);
        }

        return ranges;
    }

    /// <summary>
    /// Writes one node record. <paramref name="inside"/> says which children are written before
    /// it in the same stream (taken from the decoder's stack); others are written as versions.
    /// </summary>
    public static void WriteNode(ByteWriter w, Node n, bool copied, OwnerRange inside, WriteOrderPositions table)
    {
        var flags = (byte)(n.Flags & StoredFlags);
        var operations = n.HasOperations;

        // An operation list is never the source's payload: it is always written.
        var omit = copied && (n.Flags & NodeFlags.Altered) == 0 && !operations;
        if (copied)
        {
            flags |= CopiedBit;
        }

        if (operations)
        {
            flags |= OperationsBit;
        }

        if (omit)
        {
            flags |= PayloadFromSourceBit;
        }

        var leftKind = RefKind(n.Left, inside);
        var rightKind = RefKind(n.Right, inside);
        var key = n.Key;
        var payload = omit ? [] : n.Payload;
        var ranges = (n.Flags & NodeFlags.DependsOnTree) != 0;

        // The record is written straight into one reserved span, up to the ranges if there are
        // any and to the end if not: flags, shape, key, payload, height, SCV, SSV (unless "same
        // as SCV"), [ranges], left and right versions (for outside children).
        var s = w.Reserve(FixedRecordBytes + (4 * MaxVersionBytes) + key.Length + payload.Length);
        var at = 0;
        s[at++] = flags;
        s[at++] = (byte)(leftKind | (rightKind << 2) | SourceKinds(n));
        at = ByteWriter.Bytes(s, at, key);
        if (!omit)
        {
            at = ByteWriter.Bytes(s, at, payload);
        }

        at = PutSourceVersions(s, at, n, table);
        if (ranges)
        {
            w.Advance(at);
            WriteRanges(w, n.DependencyRanges ?? []);
            s = w.Reserve(2 * MaxVersionBytes);
            at = 0;
        }

        if (leftKind >= RefPersistent)
        {
            at = PutVersion(s, at, n.Left!.Vn, table);
        }

        if (rightKind >= RefPersistent)
        {
            at = PutVersion(s, at, n.Right!.Vn, table);
        }

        w.Advance(at);
    }

    /// <summary>The most bytes a record takes besides its key, payload, versions and ranges: flags, shape, two length varints, height.</summary>
    private const int FixedRecordBytes = 1 + 1 + 5 + 5 + 1;

    /// <summary>The most bytes a version takes: a thread id and a sequence varint, or a table index and a node index varint.</summary>
    private const int MaxVersionBytes = 11;

    /// <summary>Writes a version at <paramref name="at"/> in a span <see cref="ByteWriter.Reserve"/> gave; returns the offset past it.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int PutVersion(Span<byte> s, int at, NodeVersion v, PositionIndex table)
    {
        if (v.IsEphemeral)
        {
            s[at] = (byte)v.ThreadId;
            return ByteWriter.Varint(s, at + 1, (ulong)v.Sequence);
        }

        if (v.IsPersistent)
        {
            at = ByteWriter.Varint(s, at, (ulong)table.IndexOf(v.Position));
            return ByteWriter.Varint(s, at, (ulong)v.Index);
        }

        return at;
    }

    /// <summary>
    /// <see cref="WriteMetadata"/> up to the ranges (height, SCV, SSV unless "same as SCV") at
    /// <paramref name="at"/> in a reserved span; returns the offset past it.
    /// </summary>
    private static int PutSourceVersions(Span<byte> s, int at, Node n, PositionIndex table)
    {
        s[at++] = n.Height;
        at = PutVersion(s, at, n.Scv, table);
        return n.Ssv.IsSome && n.Ssv == n.Scv ? at : PutVersion(s, at, n.Ssv, table);
    }

    /// <summary>The SSV and SCV kinds in their shape-byte bits (4-5 and 6-7).</summary>
    public static byte SourceKinds(Node n)
    {
        var scvKind = VersionKind(n.Scv);
        var ssvKind = n.Ssv.IsSome && n.Ssv == n.Scv ? VersionSameAsScv : VersionKind(n.Ssv);
        return (byte)((ssvKind << 4) | (scvKind << 6));
    }

    /// <summary>Height, SCV, SSV (unless "same as SCV") and, for DependsOnTree, the ranges: the part of a record intentions and checkpoints share.</summary>
    public static void WriteMetadata(ByteWriter w, Node n, PositionIndex table)
    {
        w.Advance(PutSourceVersions(w.Reserve(1 + (2 * MaxVersionBytes)), 0, n, table));
        if ((n.Flags & NodeFlags.DependsOnTree) != 0)
        {
            WriteRanges(w, n.DependencyRanges ?? []);
        }
    }

    /// <summary>Reads what <see cref="WriteMetadata"/> wrote into <paramref name="n"/>, whose <see cref="Node.Flags"/> are already set; <paramref name="shape"/> gives the SSV and SCV kinds.</summary>
    public static void ReadMetadata(ref ByteReader r, byte shape, long[] table, Node n)
    {
        var ssvKind = (byte)((shape >> 4) & 3);
        var scvKind = (byte)(shape >> 6);
        var height = r.Byte("height");
        if (height == 0)
        {
            r.Fail("height 0");
        }

        var scv = ReadVersion(ref r, scvKind, table, "SCV");
        var ssv = ssvKind == VersionSameAsScv ? scv : ReadVersion(ref r, ssvKind, table, "SSV");
        if (ssvKind == VersionSameAsScv && !scv.IsSome)
        {
            r.Fail("the SSV is 'same as SCV' but there is no SCV");
        }

        n.Height = height;
        n.Scv = scv;
        n.Ssv = ssv;
        n.DependencyRanges = (n.Flags & NodeFlags.DependsOnTree) != 0 ? ReadRanges(ref r, atLeastOne: true) : null;
    }

    /// <summary>Fails on a shape byte whose SCV kind is "same as SCV".</summary>
    public static void CheckScvKind(ref ByteReader r, byte shape)
    {
        if (shape >> 6 == VersionSameAsScv)
        {
            r.Fail("the SCV kind is 'same as SCV'");
        }
    }

    private static byte RefKind(Node? child, OwnerRange inside) =>
        child is null ? RefNull : inside.Contains(child) ? RefInside : VersionKind(child.Vn);

    /// <summary>What a node record says about the node's children and source.</summary>
    public struct Refs
    {
        public byte LeftKind;
        public byte RightKind;
        public NodeVersion Left;
        public NodeVersion Right;
        public bool Copied;
    }

    /// <summary>
    /// Reads one node record into a node rented from <paramref name="pool"/>. Intention records
    /// (<paramref name="allowCopied"/>) may carry an operation list when
    /// <paramref name="allowOperations"/> (format 3); the list is checked here, as part of the format.
    /// </summary>
    public static Node ReadNode(ref ByteReader r, NodePoolLease pool, long[] table, bool allowCopied, out Refs refs, bool allowOperations = false)
    {
        var flags = r.Byte("flags");
        var allowed = (byte)StoredFlags | (allowCopied ? CopiedBit | PayloadFromSourceBit : 0) | (allowOperations ? OperationsBit : 0);
        if ((flags & ~allowed) != 0)
        {
            r.Fail($"flags {flags:X2} set a reserved bit");
        }

        var fromSource = (flags & PayloadFromSourceBit) != 0;
        var operations = (flags & OperationsBit) != 0;
        if (fromSource && ((flags & CopiedBit) == 0 || (flags & (byte)NodeFlags.Altered) != 0 || operations))
        {
            r.Fail("only a copied, unaltered node without operations takes its payload from its source");
        }

        var shape = r.Byte("shape");
        refs = default;
        refs.Copied = (flags & CopiedBit) != 0;
        refs.LeftKind = (byte)(shape & 3);
        refs.RightKind = (byte)((shape >> 2) & 3);
        CheckScvKind(ref r, shape);
        var key = r.Bytes("key");
        if (key.Length == 0)
        {
            r.Fail("empty key");
        }

        // A value (not an operation list) goes into the database's value pool when it has one
        // (docs/value-storage.md): meld frees it like a value written on this server.
        byte[] payload;
        var pooled = false;
        if (fromSource)
        {
            payload = OmittedPayload;
        }
        else if (pool.Values is { } values && !operations)
        {
            payload = values.Copy(r.BytesSpan("payload"), out pooled);
        }
        else
        {
            payload = r.Bytes("payload");
        }

        if (operations && Commutative.OperationList.Check(payload) is { } malformed)
        {
            r.Fail(malformed);
        }

        var n = pool.Rent();
        n.Key = key;
        n.Payload = payload;
        n.PayloadFromPool = pooled;
        n.Flags = (NodeFlags)(flags & (byte)StoredFlags) | (operations ? NodeFlags.Operations : NodeFlags.None);
        ReadMetadata(ref r, shape, table, n);
        refs.Left = refs.LeftKind >= RefPersistent ? ReadVersion(ref r, refs.LeftKind, table, "left child") : NodeVersion.None;
        refs.Right = refs.RightKind >= RefPersistent ? ReadVersion(ref r, refs.RightKind, table, "right child") : NodeVersion.None;
        return n;
    }
}
