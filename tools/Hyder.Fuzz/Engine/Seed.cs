namespace Hyder.Fuzz.Engine;

/// <summary>How a structured field is stored, for the structure-aware mutations.</summary>
public enum FieldKind : byte
{
    /// <summary>An unsigned little-endian integer of <see cref="Field.Width"/> bytes.</summary>
    UInt,

    /// <summary>A signed (two's complement) little-endian integer: negative values are tried too.</summary>
    Int,

    /// <summary>An unsigned big-endian integer (gRPC's message length).</summary>
    UIntBigEndian,

    /// <summary>An unsigned LEB128 varint (block bodies, protobuf): its encoded length may change.</summary>
    Varint,
}

/// <summary>A length, count or other integer field of a seed that the mutator aims at.</summary>
/// <param name="Offset">Where the field starts.</param>
/// <param name="Width">Bytes of a fixed-width field (1, 2, 4 or 8); ignored for varints.</param>
/// <param name="Kind">How it is stored.</param>
/// <param name="Name">What it is, for replay output.</param>
public readonly record struct Field(int Offset, int Width, FieldKind Kind, string Name);

/// <summary>
/// A valid input made by the real encoder, with the fields worth aiming at and whatever else the
/// target needs to run it (the other blocks of an intention, the snapshot, the method).
/// </summary>
public sealed class Seed(string name, byte[] bytes, IReadOnlyList<Field>? fields = null, object? context = null)
{
    /// <summary>A short name for output.</summary>
    public string Name { get; } = name;

    /// <summary>The encoded bytes; never changed (mutations work on copies).</summary>
    public byte[] Bytes { get; } = bytes;

    /// <summary>Known integer fields.</summary>
    public IReadOnlyList<Field> Fields { get; } = fields ?? [];

    /// <summary>Target-specific data the bytes are decoded with.</summary>
    public object? Context { get; } = context;

    /// <inheritdoc />
    public override string ToString() => $"{Name} ({Bytes.Length} bytes)";
}
