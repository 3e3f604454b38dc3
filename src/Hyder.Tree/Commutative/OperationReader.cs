using System.Buffers.Binary;

namespace Hyder.Tree.Commutative;

/// <summary>
/// Reads an operation list in place, without allocating (meld's hot path). <see cref="Next"/> is
/// false at the end or at the first malformed byte; <see cref="Error"/> then says which.
/// </summary>
public ref struct OperationReader
{
    private readonly ReadOnlySpan<byte> _list;
    private int _at;

    /// <summary>Reads <paramref name="list"/>.</summary>
    public OperationReader(ReadOnlySpan<byte> list)
    {
        _list = list;
        _at = 0;
        Kind = default;
        Number = 0;
        Min = long.MinValue;
        Max = long.MaxValue;
        K = 0;
        Value = default;
        Error = null;
    }

    /// <summary>The current operation's kind.</summary>
    public ChangeKind Kind { get; private set; }

    /// <summary>The current operation's delta, operand or order.</summary>
    public long Number { get; private set; }

    /// <summary>The current Add's lower bound.</summary>
    public long Min { get; private set; }

    /// <summary>The current Add's upper bound.</summary>
    public long Max { get; private set; }

    /// <summary>The current TopKInsert's K.</summary>
    public int K { get; private set; }

    /// <summary>The current Put's, OPut's or TopKInsert's value.</summary>
    public ReadOnlySpan<byte> Value { get; private set; }

    /// <summary>Why reading stopped early, or null.</summary>
    public string? Error { get; private set; }

    /// <summary>The current operation as a value (allocates its bytes).</summary>
    public readonly Operation Current => Kind switch
    {
        ChangeKind.Put => Operation.Put(Value.ToArray()),
        ChangeKind.Clear => Operation.Clear(),
        ChangeKind.Add => Operation.Add(Number, Min == long.MinValue ? null : Min, Max == long.MaxValue ? null : Max),
        ChangeKind.Max => Operation.MaxOf(Number),
        ChangeKind.Min => Operation.MinOf(Number),
        ChangeKind.OPut => Operation.OPut(Number, Value.ToArray()),
        _ => Operation.TopKInsert(K, Number, Value.ToArray()),
    };

    /// <summary>Moves to the next operation; false at the end of the list or on a malformed one.</summary>
    public bool Next()
    {
        if (Error is not null || _at >= _list.Length)
        {
            return false;
        }

        var start = _at;
        var kind = (ChangeKind)_list[_at++];
        Min = long.MinValue;
        Max = long.MaxValue;
        Number = 0;
        K = 0;
        Value = default;
        switch (kind)
        {
            case ChangeKind.Put:
                if (!ReadBytes(out var put))
                {
                    return Fail(start, "Put value is truncated");
                }

                Value = put;
                break;
            case ChangeKind.Clear:
                break;
            case ChangeKind.Add:
                if (!ReadInt64(out var delta) || _at >= _list.Length)
                {
                    return Fail(start, "Add is truncated");
                }

                Number = delta;
                var bounds = _list[_at++];
                if ((bounds & ~3) != 0)
                {
                    return Fail(start, $"Add has invalid bound bits {bounds:X2}");
                }

                if ((bounds & 1) != 0)
                {
                    if (!ReadInt64(out var min) || min == long.MinValue)
                    {
                        return Fail(start, "Add's lower bound is truncated or not a bound");
                    }

                    Min = min;
                }

                if ((bounds & 2) != 0)
                {
                    if (!ReadInt64(out var max) || max == long.MaxValue)
                    {
                        return Fail(start, "Add's upper bound is truncated or not a bound");
                    }

                    Max = max;
                }

                if (Min > Max)
                {
                    return Fail(start, $"Add's bounds [{Min}, {Max}] are empty");
                }

                break;
            case ChangeKind.Max or ChangeKind.Min:
                if (!ReadInt64(out var operand))
                {
                    return Fail(start, $"{kind} is truncated");
                }

                Number = operand;
                break;
            case ChangeKind.OPut:
                if (!ReadInt64(out var order) || !ReadBytes(out var oput))
                {
                    return Fail(start, "OPut is truncated");
                }

                Number = order;
                Value = oput;
                break;
            case ChangeKind.TopKInsert:
                if (!ReadVarint(out var k) || k is < 1 or > Operation.MaxTopK)
                {
                    return Fail(start, $"TopKInsert's K is truncated or outside 1..{Operation.MaxTopK}");
                }

                if (!ReadInt64(out var topOrder) || !ReadBytes(out var top))
                {
                    return Fail(start, "TopKInsert is truncated");
                }

                K = (int)k;
                Number = topOrder;
                Value = top;
                break;
            default:
                return Fail(start, $"unknown operation kind {(byte)kind}");
        }

        Kind = kind;
        return true;
    }

    private bool Fail(int at, string why)
    {
        Error = $"operation at byte {at}: {why}";
        return false;
    }

    private bool ReadInt64(out long v)
    {
        if (_list.Length - _at < 8)
        {
            v = 0;
            return false;
        }

        v = BinaryPrimitives.ReadInt64LittleEndian(_list[_at..]);
        _at += 8;
        return true;
    }

    private bool ReadVarint(out ulong v)
    {
        v = 0;
        for (var shift = 0; shift < 35; shift += 7)
        {
            if (_at >= _list.Length)
            {
                return false;
            }

            var b = _list[_at++];
            v |= (ulong)(b & 0x7F) << shift;
            if (b < 0x80)
            {
                // Shortest form only, as everywhere in the format.
                return b != 0 || shift == 0;
            }
        }

        return false;
    }

    private bool ReadBytes(out ReadOnlySpan<byte> bytes)
    {
        bytes = default;
        if (!ReadVarint(out var n) || n > (ulong)(_list.Length - _at))
        {
            return false;
        }

        bytes = _list.Slice(_at, (int)n);
        _at += (int)n;
        return true;
    }
}
