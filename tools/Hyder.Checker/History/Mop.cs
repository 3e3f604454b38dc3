namespace Hyder.Checker;

/// <summary>What a micro-operation does.</summary>
public enum MopKind
{
    /// <summary>List-append: append a value, unique for its key, to the list at a key.</summary>
    Append,

    /// <summary>List-append: read the whole list at a key.</summary>
    ReadList,

    /// <summary>Register: overwrite the value at a key with a value unique for that key.</summary>
    Write,

    /// <summary>Register: read the value at a key (null: the key was never written).</summary>
    ReadRegister,
}

/// <summary>
/// One micro-operation of a transaction. List keys and register keys are separate name spaces:
/// key 1 of an <see cref="MopKind.Append"/> and key 1 of a <see cref="MopKind.Write"/> are
/// different objects. A read whose result is not known (an invocation, a failed or indeterminate
/// transaction) has <see cref="Known"/> false.
/// </summary>
public sealed class Mop
{
    private Mop(MopKind kind, long key, long? value, IReadOnlyList<long>? list, bool known)
    {
        Kind = kind;
        Key = key;
        Value = value;
        List = list;
        Known = known;
    }

    /// <summary>What the micro-operation does.</summary>
    public MopKind Kind { get; }

    /// <summary>The key it acts on.</summary>
    public long Key { get; }

    /// <summary>The value appended or written, or the register value read (null: never written).</summary>
    public long? Value { get; }

    /// <summary>The list read (null when not known).</summary>
    public IReadOnlyList<long>? List { get; }

    /// <summary>False for a read whose result the client does not know.</summary>
    public bool Known { get; }

    /// <summary>True for appends and writes.</summary>
    public bool IsWrite => Kind is MopKind.Append or MopKind.Write;

    /// <summary>True for list-append micro-operations (appends and list reads).</summary>
    public bool IsList => Kind is MopKind.Append or MopKind.ReadList;

    /// <summary>Append <paramref name="value"/> to the list at <paramref name="key"/>.</summary>
    public static Mop Append(long key, long value) => new(MopKind.Append, key, value, null, true);

    /// <summary>A list read that returned <paramref name="values"/>.</summary>
    public static Mop Read(long key, params long[] values) => new(MopKind.ReadList, key, null, values, true);

    /// <summary>A list read whose result is not known yet.</summary>
    public static Mop ReadUnknown(long key) => new(MopKind.ReadList, key, null, null, false);

    /// <summary>Write <paramref name="value"/> to the register at <paramref name="key"/>.</summary>
    public static Mop Write(long key, long value) => new(MopKind.Write, key, value, null, true);

    /// <summary>A register read that returned <paramref name="value"/> (null: never written).</summary>
    public static Mop ReadRegister(long key, long? value) => new(MopKind.ReadRegister, key, value, null, true);

    /// <summary>A register read whose result is not known yet.</summary>
    public static Mop ReadRegisterUnknown(long key) => new(MopKind.ReadRegister, key, null, null, false);

    /// <summary>This read with its result filled in (list reads).</summary>
    public Mop WithList(IReadOnlyList<long> values) =>
        Kind == MopKind.ReadList ? new(Kind, Key, null, values, true) : throw new InvalidOperationException($"{this} is not a list read");

    /// <summary>This read with its result filled in (register reads).</summary>
    public Mop WithValue(long? value) =>
        Kind == MopKind.ReadRegister ? new(Kind, Key, value, null, true) : throw new InvalidOperationException($"{this} is not a register read");

    /// <summary>The same micro-operation with its read result forgotten (what an invocation carries).</summary>
    public Mop AsInvocation() => Kind switch
    {
        MopKind.ReadList => ReadUnknown(Key),
        MopKind.ReadRegister => ReadRegisterUnknown(Key),
        _ => this,
    };

    /// <summary>Short text: <c>append 1 5</c>, <c>r 1 [5 6]</c>, <c>w 2 7</c>, <c>rr 2 7</c>.</summary>
    public override string ToString() => Kind switch
    {
        MopKind.Append => $"append {Key} {Value}",
        MopKind.ReadList => $"r {Key} {(Known ? FormatList(List!) : "?")}",
        MopKind.Write => $"w {Key} {Value}",
        _ => $"rr {Key} {(Known ? Value?.ToString(System.Globalization.CultureInfo.InvariantCulture) ?? "nil" : "?")}",
    };

    /// <summary>A list as <c>[1 2 3]</c>.</summary>
    public static string FormatList(IReadOnlyList<long> values) => "[" + string.Join(' ', values) + "]";
}
