using System.Buffers.Binary;

namespace Hyder.Tree.Commutative;

/// <summary>
/// The payload of a node that carries operations (<see cref="NodeFlags.Operations"/>): one or more
/// operations back to back, to the end of the payload (docs/doppel.md, "Operation lists"). Appending
/// is concatenation, so group meld joins two lists without decoding them.
/// </summary>
/// <remarks>
/// Per operation: the kind byte, then Put: bytes; Clear: nothing; Add: i64 delta, a bounds byte
/// (bit 0 min follows, bit 1 max follows), the bounds present (i64 each); Max, Min: i64 operand;
/// OPut: i64 order, bytes; TopKInsert: varint K (1..1024), i64 order, bytes. Integers are
/// little-endian; bytes are a varint length and the bytes.
/// </remarks>
public static class OperationList
{
    /// <summary>The list holding <paramref name="operations"/>, in order (at least one).</summary>
    public static byte[] Encode(params ReadOnlySpan<Operation> operations)
    {
        if (operations.IsEmpty)
        {
            ThrowHelper.ThrowArgument(nameof(operations), "an operation list holds at least one operation");
        }

        var size = 0;
        foreach (var op in operations)
        {
            size += SizeOf(op);
        }

        var list = new byte[size];
        var at = 0;
        foreach (var op in operations)
        {
            at += Write(list.AsSpan(at), op);
        }

        return list;
    }

    /// <summary><paramref name="list"/> followed by <paramref name="operation"/> (a new array).</summary>
    public static byte[] Append(ReadOnlySpan<byte> list, in Operation operation)
    {
        var result = new byte[list.Length + SizeOf(operation)];
        list.CopyTo(result);
        Write(result.AsSpan(list.Length), operation);
        return result;
    }

    /// <summary><paramref name="first"/>'s operations, then <paramref name="second"/>'s (a new array).</summary>
    public static byte[] Concat(ReadOnlySpan<byte> first, ReadOnlySpan<byte> second)
    {
        var result = new byte[first.Length + second.Length];
        first.CopyTo(result);
        second.CopyTo(result.AsSpan(first.Length));
        return result;
    }

    /// <summary>Every operation of a well-formed list (tests, dumps).</summary>
    public static List<Operation> Decode(ReadOnlySpan<byte> list)
    {
        var result = new List<Operation>();
        var r = new OperationReader(list);
        while (r.Next())
        {
            result.Add(r.Current);
        }

        if (r.Error is { } error)
        {
            ThrowHelper.ThrowArgument(nameof(list), error);
        }

        return result;
    }

    /// <summary>Null when <paramref name="list"/> is a well-formed, non-empty operation list; otherwise why not.</summary>
    public static string? Check(ReadOnlySpan<byte> list)
    {
        if (list.IsEmpty)
        {
            return "the operation list is empty";
        }

        var r = new OperationReader(list);
        while (r.Next())
        {
        }

        return r.Error;
    }

    /// <summary>True when the (well-formed) list holds an ordinary write (Put or Clear).</summary>
    public static bool HasWrite(ReadOnlySpan<byte> list)
    {
        var r = new OperationReader(list);
        while (r.Next())
        {
            if (r.Kind is ChangeKind.Put or ChangeKind.Clear)
            {
                return true;
            }
        }

        return false;
    }

    /// <summary>Operations in the (well-formed) list.</summary>
    public static int Count(ReadOnlySpan<byte> list)
    {
        var r = new OperationReader(list);
        var n = 0;
        while (r.Next())
        {
            n++;
        }

        return n;
    }

    /// <summary>A readable form of the list (dumps, failure messages).</summary>
    public static string Format(ReadOnlySpan<byte> list)
    {
        var r = new OperationReader(list);
        var parts = new List<string>();
        while (r.Next())
        {
            parts.Add(r.Current.ToString());
        }

        return r.Error is null ? $"[{string.Join(", ", parts)}]" : $"[{string.Join(", ", parts)}, malformed: {r.Error}]";
    }

    private static int SizeOf(in Operation op) => 1 + op.Kind switch
    {
        ChangeKind.Put => BytesSize(op.Value!),
        ChangeKind.Clear => 0,
        ChangeKind.Add => 8 + 1 + (op.Min != long.MinValue ? 8 : 0) + (op.Max != long.MaxValue ? 8 : 0),
        ChangeKind.Max or ChangeKind.Min => 8,
        ChangeKind.OPut => 8 + BytesSize(op.Value!),
        _ => VarintSize((ulong)op.K) + 8 + BytesSize(op.Value!),
    };

    private static int Write(Span<byte> to, in Operation op)
    {
        to[0] = (byte)op.Kind;
        var at = 1;
        switch (op.Kind)
        {
            case ChangeKind.Put:
                at += WriteBytes(to[at..], op.Value!);
                break;
            case ChangeKind.Clear:
                break;
            case ChangeKind.Add:
                BinaryPrimitives.WriteInt64LittleEndian(to[at..], op.Number);
                at += 8;
                var hasMin = op.Min != long.MinValue;
                var hasMax = op.Max != long.MaxValue;
                to[at++] = (byte)((hasMin ? 1 : 0) | (hasMax ? 2 : 0));
                if (hasMin)
                {
                    BinaryPrimitives.WriteInt64LittleEndian(to[at..], op.Min);
                    at += 8;
                }

                if (hasMax)
                {
                    BinaryPrimitives.WriteInt64LittleEndian(to[at..], op.Max);
                    at += 8;
                }

                break;
            case ChangeKind.Max or ChangeKind.Min:
                BinaryPrimitives.WriteInt64LittleEndian(to[at..], op.Number);
                at += 8;
                break;
            case ChangeKind.OPut:
                BinaryPrimitives.WriteInt64LittleEndian(to[at..], op.Number);
                at += 8;
                at += WriteBytes(to[at..], op.Value!);
                break;
            default:
                at += WriteVarint(to[at..], (ulong)op.K);
                BinaryPrimitives.WriteInt64LittleEndian(to[at..], op.Number);
                at += 8;
                at += WriteBytes(to[at..], op.Value!);
                break;
        }

        return at;
    }

    internal static int VarintSize(ulong v)
    {
        var n = 1;
        while (v >= 0x80)
        {
            v >>= 7;
            n++;
        }

        return n;
    }

    internal static int WriteVarint(Span<byte> to, ulong v)
    {
        var at = 0;
        while (v >= 0x80)
        {
            to[at++] = (byte)(v | 0x80);
            v >>= 7;
        }

        to[at++] = (byte)v;
        return at;
    }

    private static int BytesSize(byte[] value) => VarintSize((ulong)value.Length) + value.Length;

    private static int WriteBytes(Span<byte> to, ReadOnlySpan<byte> value)
    {
        var at = WriteVarint(to, (ulong)value.Length);
        value.CopyTo(to[at..]);
        return at + value.Length;
    }
}
