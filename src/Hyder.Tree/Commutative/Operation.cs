namespace Hyder.Tree.Commutative;

/// <summary>
/// What one entry of an operation list does to a key's value (docs/doppel.md). Not the API's
/// operation kinds (<c>Hyder.Server.Engine.OperationKind</c>: get, put, delete, scan, …), which
/// number differently: an entry is a change a meld applies, never a read.
/// </summary>
public enum ChangeKind : byte
{
    /// <summary>An ordinary write the transaction made after or before operations on the key: the value becomes <see cref="Operation.Value"/>.</summary>
    Put = 1,

    /// <summary>An ordinary delete: the key becomes absent.</summary>
    Clear = 2,

    /// <summary>Adds <see cref="Operation.Number"/> to an 8-byte integer (missing: 0), within [<see cref="Operation.Min"/>, <see cref="Operation.Max"/>].</summary>
    Add = 3,

    /// <summary>The larger of the integer and <see cref="Operation.Number"/> (missing: the operand).</summary>
    Max = 4,

    /// <summary>The smaller of the integer and <see cref="Operation.Number"/> (missing: the operand).</summary>
    Min = 5,

    /// <summary>Ordered put: keeps the (order, value) with the highest order (ties: the larger value).</summary>
    OPut = 6,

    /// <summary>Inserts (order, value) into a list of at most <see cref="Operation.K"/> entries with the highest orders.</summary>
    TopKInsert = 7,
}

/// <summary>
/// One commutative operation (Doppel §4; ordered escrow, CVoltDB §5), or an ordinary write recorded
/// between them. Operations return nothing to the transaction: they are applied at its place in the
/// log, to the value the key has there.
/// </summary>
public readonly struct Operation
{
    /// <summary>The largest K a top-k list may have: bounds the list's size.</summary>
    public const int MaxTopK = 1024;

    private Operation(ChangeKind kind, long number, long min, long max, int k, byte[]? value)
    {
        Kind = kind;
        Number = number;
        Min = min;
        Max = max;
        K = k;
        Value = value;
    }

    /// <summary>What it does.</summary>
    public ChangeKind Kind { get; }

    /// <summary>Add's delta, Max's and Min's operand, OPut's and TopKInsert's order.</summary>
    public long Number { get; }

    /// <summary>Add's lower bound (<see cref="long.MinValue"/>: none).</summary>
    public long Min { get; }

    /// <summary>Add's upper bound (<see cref="long.MaxValue"/>: none).</summary>
    public long Max { get; }

    /// <summary>TopKInsert's K.</summary>
    public int K { get; }

    /// <summary>Put's, OPut's and TopKInsert's value.</summary>
    public byte[]? Value { get; }

    /// <summary>True for an Add with a bound: group meld must keep it, so its bound is checked in order.</summary>
    public bool IsBounded => Kind == ChangeKind.Add && (Min != long.MinValue || Max != long.MaxValue);

    /// <summary>True for the ordinary writes (Put, Clear): they make the transaction's node a checked write.</summary>
    public bool IsWrite => Kind is ChangeKind.Put or ChangeKind.Clear;

    /// <summary>An ordinary write of <paramref name="value"/>.</summary>
    public static Operation Put(byte[] value)
    {
        ArgumentNullException.ThrowIfNull(value);
        return new(ChangeKind.Put, 0, long.MinValue, long.MaxValue, 0, value);
    }

    /// <summary>An ordinary delete.</summary>
    public static Operation Clear() => new(ChangeKind.Clear, 0, long.MinValue, long.MaxValue, 0, null);

    /// <summary>Adds <paramref name="delta"/>; the result must lie in [<paramref name="min"/>, <paramref name="max"/>] (each optional) and in the 64-bit range.</summary>
    public static Operation Add(long delta, long? min = null, long? max = null)
    {
        var lo = min ?? long.MinValue;
        var hi = max ?? long.MaxValue;
        if (lo > hi)
        {
            ThrowHelper.ThrowArgument(nameof(min), $"the bounds [{lo}, {hi}] are empty");
        }

        return new(ChangeKind.Add, delta, lo, hi, 0, null);
    }

    /// <summary>Keeps the larger of the value and <paramref name="operand"/>.</summary>
    public static Operation MaxOf(long operand) => new(ChangeKind.Max, operand, long.MinValue, long.MaxValue, 0, null);

    /// <summary>Keeps the smaller of the value and <paramref name="operand"/>.</summary>
    public static Operation MinOf(long operand) => new(ChangeKind.Min, operand, long.MinValue, long.MaxValue, 0, null);

    /// <summary>Keeps (<paramref name="order"/>, <paramref name="value"/>) if its order is the highest.</summary>
    public static Operation OPut(long order, byte[] value)
    {
        ArgumentNullException.ThrowIfNull(value);
        return new(ChangeKind.OPut, order, long.MinValue, long.MaxValue, 0, value);
    }

    /// <summary>Inserts (<paramref name="order"/>, <paramref name="value"/>) into a top-<paramref name="k"/> list.</summary>
    public static Operation TopKInsert(int k, long order, byte[] value)
    {
        ArgumentNullException.ThrowIfNull(value);
        if (k is < 1 or > MaxTopK)
        {
            ThrowHelper.ThrowArgumentOutOfRange(nameof(k), $"k {k} is outside 1..{MaxTopK}");
        }

        return new(ChangeKind.TopKInsert, order, long.MinValue, long.MaxValue, k, value);
    }

    /// <inheritdoc/>
    public override string ToString() => Kind switch
    {
        ChangeKind.Put => $"put {Keys.Format(Value)}",
        ChangeKind.Clear => "delete",
        ChangeKind.Add => IsBounded ? $"add {Number} in [{Min}, {Max}]" : $"add {Number}",
        ChangeKind.Max => $"max {Number}",
        ChangeKind.Min => $"min {Number}",
        ChangeKind.OPut => $"oput {Number}:{Keys.Format(Value)}",
        _ => $"top{K} {Number}:{Keys.Format(Value)}",
    };
}
