using System.Buffers.Binary;

namespace Hyder.Tree.Commutative;

/// <summary>Why an operation list could not be applied.</summary>
public enum FoldError : byte
{
    /// <summary>Applied.</summary>
    None = 0,

    /// <summary>A bounded Add would leave its [min, max], or an Add would leave the 64-bit range.</summary>
    BoundViolated = 1,

    /// <summary>An operation met a value of another type (docs/doppel.md, "Values").</summary>
    TypeMismatch = 2,
}

/// <summary>
/// Applies an operation list to a value: the one definition of what the operations mean, used by
/// final meld, the brute-force validator and the executor's own view (docs/doppel.md, "Values").
/// Deterministic and independent of everything but its inputs.
/// </summary>
/// <remarks>
/// Values: Add, Max and Min work on 8-byte little-endian signed integers; OPut on an ordered value
/// (i64 order, then the value's bytes); TopKInsert on a top-k list (varint count 1..1024, then per
/// entry i64 order and bytes, orders strictly descending). A missing key is each operation's
/// identity: 0 for Add, the operand for Max and Min, nothing for OPut and TopKInsert.
/// </remarks>
public static class OperationFold
{
    private enum Cell : byte
    {
        Missing,
        Number,
        Bytes,
    }

    /// <summary>
    /// Applies <paramref name="list"/> (well-formed) to <paramref name="current"/> (null: the key is
    /// absent). On success <paramref name="result"/> is the new value (null: absent; the very array
    /// <paramref name="current"/> when nothing changed it).
    /// </summary>
    /// <param name="list">The operation list.</param>
    /// <param name="current">The key's value before the list.</param>
    /// <param name="result">The key's value after it.</param>
    /// <param name="lenient">Skip an operation that fails instead of stopping (the executor's view of a transaction that will abort).</param>
    public static FoldError Apply(ReadOnlySpan<byte> list, byte[]? current, out byte[]? result, bool lenient = false)
    {
        var cell = current is null ? Cell.Missing : Cell.Bytes;
        long number = 0;
        ReadOnlySpan<byte> bytes = current;
        var unchanged = true;
        var r = new OperationReader(list);
        while (r.Next())
        {
            var error = Step(ref r, ref cell, ref number, ref bytes);
            if (error == FoldError.None)
            {
                unchanged = false;
            }
            else if (!lenient)
            {
                result = null;
                return error;
            }
        }

        if (r.Error is { } malformed)
        {
            ThrowHelper.ThrowInvariant($"an operation list reached meld malformed: {malformed}");
        }

        result = cell switch
        {
            Cell.Missing => null,
            Cell.Number => Integer(number),
            _ => unchanged ? current : bytes.ToArray(),
        };
        return FoldError.None;
    }

    /// <summary>The 8-byte little-endian encoding of an integer value.</summary>
    public static byte[] Integer(long value)
    {
        var bytes = new byte[8];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, value);
        return bytes;
    }

    /// <summary>Reads an integer value: true when <paramref name="value"/> is one (exactly 8 bytes).</summary>
    public static bool TryInteger(ReadOnlySpan<byte> value, out long number)
    {
        if (value.Length != 8)
        {
            number = 0;
            return false;
        }

        number = BinaryPrimitives.ReadInt64LittleEndian(value);
        return true;
    }

    /// <summary>The encoding of an ordered value (OPut's).</summary>
    public static byte[] Ordered(long order, ReadOnlySpan<byte> value)
    {
        var bytes = new byte[8 + value.Length];
        BinaryPrimitives.WriteInt64LittleEndian(bytes, order);
        value.CopyTo(bytes.AsSpan(8));
        return bytes;
    }

    /// <summary>Reads an ordered value: true when <paramref name="value"/> is one (at least 8 bytes).</summary>
    public static bool TryOrdered(ReadOnlySpan<byte> value, out long order, out ReadOnlySpan<byte> rest)
    {
        if (value.Length < 8)
        {
            order = 0;
            rest = default;
            return false;
        }

        order = BinaryPrimitives.ReadInt64LittleEndian(value);
        rest = value[8..];
        return true;
    }

    /// <summary>The encoding of a top-k list of (order, value), orders strictly descending.</summary>
    public static byte[] TopK(IReadOnlyList<(long Order, byte[] Value)> entries)
    {
        var size = OperationList.VarintSize((ulong)entries.Count);
        foreach (var (_, v) in entries)
        {
            size += 8 + OperationList.VarintSize((ulong)v.Length) + v.Length;
        }

        var bytes = new byte[size];
        var at = OperationList.WriteVarint(bytes, (ulong)entries.Count);
        foreach (var (o, v) in entries)
        {
            BinaryPrimitives.WriteInt64LittleEndian(bytes.AsSpan(at), o);
            at += 8;
            at += OperationList.WriteVarint(bytes.AsSpan(at), (ulong)v.Length);
            v.CopyTo(bytes.AsSpan(at));
            at += v.Length;
        }

        return bytes;
    }

    /// <summary>Reads a top-k list: null when <paramref name="value"/> is not one.</summary>
    public static List<(long Order, byte[] Value)>? TryTopK(ReadOnlySpan<byte> value)
    {
        var r = new OperationReaderBytes(value);
        if (!r.Varint(out var count) || count is < 1 or > Operation.MaxTopK)
        {
            return null;
        }

        var entries = new List<(long, byte[])>((int)count);
        for (var i = 0UL; i < count; i++)
        {
            if (!r.Int64(out var order) || !r.Bytes(out var v) || (entries.Count > 0 && order >= entries[^1].Item1))
            {
                return null;
            }

            entries.Add((order, v.ToArray()));
        }

        return r.AtEnd ? entries : null;
    }

    private static FoldError Step(ref OperationReader r, ref Cell cell, ref long number, ref ReadOnlySpan<byte> bytes)
    {
        switch (r.Kind)
        {
            case ChangeKind.Put:
                cell = Cell.Bytes;
                bytes = r.Value;
                return FoldError.None;
            case ChangeKind.Clear:
                cell = Cell.Missing;
                bytes = default;
                return FoldError.None;
            case ChangeKind.Add or ChangeKind.Max or ChangeKind.Min:
            {
                long x;
                var missing = cell == Cell.Missing;
                if (cell == Cell.Number)
                {
                    x = number;
                }
                else if (missing)
                {
                    x = 0;
                }
                else if (!TryInteger(bytes, out x))
                {
                    return FoldError.TypeMismatch;
                }

                long y;
                if (r.Kind == ChangeKind.Add)
                {
                    // The 64-bit range is every Add's implicit bound: overflow never wraps.
                    if ((r.Number > 0 && x > long.MaxValue - r.Number) || (r.Number < 0 && x < long.MinValue - r.Number))
                    {
                        return FoldError.BoundViolated;
                    }

                    y = x + r.Number;
                    if (y < r.Min || y > r.Max)
                    {
                        return FoldError.BoundViolated;
                    }
                }
                else
                {
                    y = missing ? r.Number : r.Kind == ChangeKind.Max ? Math.Max(x, r.Number) : Math.Min(x, r.Number);
                }

                cell = Cell.Number;
                number = y;
                bytes = default;
                return FoldError.None;
            }

            case ChangeKind.OPut:
            {
                // The number cell only caches an integer's encoding: every operation sees bytes
                // alike, so a list applied whole or in parts (group meld) gives the same result.
                if (cell == Cell.Number)
                {
                    cell = Cell.Bytes;
                    bytes = Integer(number);
                }

                if (cell == Cell.Bytes)
                {
                    if (!TryOrdered(bytes, out var order, out var rest))
                    {
                        return FoldError.TypeMismatch;
                    }

                    // Higher order wins; on a tie the larger value, so the result does not depend on
                    // the order the operations are applied in (Doppel's core-id tie-break, by value).
                    var c = r.Number.CompareTo(order);
                    if (c < 0 || (c == 0 && r.Value.SequenceCompareTo(rest) <= 0))
                    {
                        return FoldError.None;
                    }
                }

                cell = Cell.Bytes;
                bytes = Ordered(r.Number, r.Value);
                return FoldError.None;
            }

            default:
            {
                if (cell == Cell.Number)
                {
                    cell = Cell.Bytes;
                    bytes = Integer(number);
                }

                List<(long Order, byte[] Value)> entries;
                if (cell == Cell.Missing)
                {
                    entries = [];
                }
                else if (TryTopK(bytes) is { } parsed)
                {
                    entries = parsed;
                }
                else
                {
                    return FoldError.TypeMismatch;
                }

                InsertTopK(entries, r.K, r.Number, r.Value);
                cell = Cell.Bytes;
                bytes = TopK(entries);
                return FoldError.None;
            }
        }
    }

    /// <summary>
    /// Inserts into a list kept in descending order: one entry per order (the larger value wins a
    /// tie), then the smallest orders beyond <paramref name="k"/> are dropped.
    /// </summary>
    private static void InsertTopK(List<(long Order, byte[] Value)> entries, int k, long order, ReadOnlySpan<byte> value)
    {
        var at = 0;
        while (at < entries.Count && entries[at].Order > order)
        {
            at++;
        }

        if (at < entries.Count && entries[at].Order == order)
        {
            if (value.SequenceCompareTo(entries[at].Value) > 0)
            {
                entries[at] = (order, value.ToArray());
            }
        }
        else
        {
            entries.Insert(at, (order, value.ToArray()));
        }

        if (entries.Count > k)
        {
            entries.RemoveRange(k, entries.Count - k);
        }
    }

    /// <summary>Reads a value's fields in place.</summary>
    private ref struct OperationReaderBytes(ReadOnlySpan<byte> data)
    {
        private readonly ReadOnlySpan<byte> _data = data;
        private int _at;

        public readonly bool AtEnd => _at == _data.Length;

        public bool Int64(out long v)
        {
            if (_data.Length - _at < 8)
            {
                v = 0;
                return false;
            }

            v = BinaryPrimitives.ReadInt64LittleEndian(_data[_at..]);
            _at += 8;
            return true;
        }

        public bool Varint(out ulong v)
        {
            v = 0;
            for (var shift = 0; shift < 35; shift += 7)
            {
                if (_at >= _data.Length)
                {
                    return false;
                }

                var b = _data[_at++];
                v |= (ulong)(b & 0x7F) << shift;
                if (b < 0x80)
                {
                    return b != 0 || shift == 0;
                }
            }

            return false;
        }

        public bool Bytes(out ReadOnlySpan<byte> bytes)
        {
            bytes = default;
            if (!Varint(out var n) || n > (ulong)(_data.Length - _at))
            {
                return false;
            }

            bytes = _data.Slice(_at, (int)n);
            _at += (int)n;
            return true;
        }
    }
}
