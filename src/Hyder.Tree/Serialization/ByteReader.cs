using System.Buffers.Binary;
using System.Diagnostics.CodeAnalysis;

namespace Hyder.Tree.Serialization;

/// <summary>
/// Reads the codec's primitives from a span, checking every length against the bytes left; any
/// fault throws <see cref="IntentionFormatException"/> with <see cref="Label"/> and the item being
/// read (set by the caller, formatted only on failure).
/// </summary>
internal ref struct ByteReader(ReadOnlySpan<byte> data, string label)
{
    private readonly ReadOnlySpan<byte> _data = data;

    /// <summary>Where the data comes from ("intention", "checkpoint", ...).</summary>
    public string Label = label;

    /// <summary>What is being read (e.g. "node"), or null.</summary>
    public string? ItemKind;

    /// <summary>Which one.</summary>
    public long Item;

    public int Position { get; private set; }

    public readonly int Remaining => _data.Length - Position;

    public byte Byte(string field)
    {
        if (Position >= _data.Length)
        {
            Truncated(field);
        }

        return _data[Position++];
    }

    public uint U32(string field)
    {
        if (Remaining < 4)
        {
            Truncated(field);
        }

        var v = BinaryPrimitives.ReadUInt32LittleEndian(_data[Position..]);
        Position += 4;
        return v;
    }

    public ulong U64(string field)
    {
        if (Remaining < 8)
        {
            Truncated(field);
        }

        var v = BinaryPrimitives.ReadUInt64LittleEndian(_data[Position..]);
        Position += 8;
        return v;
    }

    /// <summary>An unsigned LEB128 varint in its shortest form, at most <paramref name="max"/>.</summary>
    public ulong Varint(string field, ulong max = ulong.MaxValue)
    {
        ulong v = 0;
        var shift = 0;
        while (true)
        {
            var b = Byte(field);
            if (shift == 63 && b > 1)
            {
                Fail($"{field} is a varint longer than 64 bits");
            }

            v |= (ulong)(b & 0x7F) << shift;
            if (b < 0x80)
            {
                if (b == 0 && shift > 0)
                {
                    Fail($"{field} is a varint that is not in its shortest form");
                }

                break;
            }

            shift += 7;
        }

        if (v > max)
        {
            Fail($"{field} {v} exceeds its limit {max}");
        }

        return v;
    }

    /// <summary>A varint that fits an int and is at most <paramref name="max"/>.</summary>
    public int Int(string field, int max) => (int)Varint(field, (ulong)max);

    /// <summary>A count of items of at least <paramref name="minItemBytes"/> bytes each: never more than the bytes left could hold.</summary>
    public int Count(string field, int minItemBytes)
    {
        var n = Varint(field, int.MaxValue);
        if (n > (ulong)(Remaining / minItemBytes))
        {
            Fail($"{field} {n} is more than the {Remaining} bytes left can hold");
        }

        return (int)n;
    }

    /// <summary>A varint length and that many bytes, copied into a new array.</summary>
    public byte[] Bytes(string field) => BytesSpan(field).ToArray();

    /// <summary>A length-prefixed byte string, as a view of the input (valid while the input is).</summary>
    public ReadOnlySpan<byte> BytesSpan(string field)
    {
        var n = Varint(field, int.MaxValue);
        if (n > (ulong)Remaining)
        {
            Fail($"{field} claims {n} bytes but only {Remaining} are left");
        }

        var bytes = _data.Slice(Position, (int)n);
        Position += (int)n;
        return bytes;
    }

    public ReadOnlySpan<byte> Rest()
    {
        var rest = _data[Position..];
        Position = _data.Length;
        return rest;
    }

    public readonly void ExpectEnd()
    {
        if (Remaining != 0)
        {
            Fail($"{Remaining} unexpected bytes after the end");
        }
    }

    [DoesNotReturn]
    public readonly void Fail(string what) =>
        throw new IntentionFormatException(ItemKind is null ? $"{Label}: {what}" : $"{Label}, {ItemKind} {Item}: {what}");

    [DoesNotReturn]
    private readonly void Truncated(string field) => Fail($"truncated while reading {field} (at byte {Position} of {_data.Length})");
}
