namespace Hyder.Fuzz.Engine;

/// <summary>The mutations <see cref="Mutator"/> draws from.</summary>
public enum MutationKind
{
    /// <summary>One bit flipped.</summary>
    FlipBit,

    /// <summary>One byte set to 0x00, 0xFF or a random value.</summary>
    SetByte,

    /// <summary>The input cut short.</summary>
    Truncate,

    /// <summary>Bytes appended (zeros, 0xFF, random or a copy of a chunk).</summary>
    Extend,

    /// <summary>The front of the input joined to the back of another seed.</summary>
    Splice,

    /// <summary>A chunk copied elsewhere.</summary>
    DuplicateChunk,

    /// <summary>A chunk removed.</summary>
    RemoveChunk,

    /// <summary>A fixed-width integer (a known field, or any offset) set to an extreme.</summary>
    SetInteger,

    /// <summary>A varint (a known field, or any offset) replaced by an extreme or malformed one.</summary>
    SetVarint,
}

/// <summary>
/// Draws mutations and their parameters from a <see cref="FuzzRandom"/>: the same generator state
/// gives the same output. Structure-aware mutations prefer the seed's known fields.
/// </summary>
public static class Mutator
{
    private static readonly MutationKind[] s_kinds = Enum.GetValues<MutationKind>();

    /// <summary>The longest input a mutation makes (inputs stay proportionate to real ones).</summary>
    public const int MaxLength = 1 << 20;

    /// <summary>Applies one mutation of a random kind that fits the input.</summary>
    public static byte[] MutateOnce(byte[] input, FuzzRandom random, Seed seed, IReadOnlyList<Seed> corpus, out string description)
    {
        var kind = input.Length == 0
            ? random.OneIn(2) ? MutationKind.Extend : MutationKind.Splice
            : s_kinds[random.Next(s_kinds.Length)];
        return Mutate(kind, input, random, seed, corpus, out description);
    }

    /// <summary>Applies one mutation of <paramref name="kind"/> with random parameters.</summary>
    public static byte[] Mutate(MutationKind kind, byte[] input, FuzzRandom random, Seed seed, IReadOnlyList<Seed> corpus, out string description)
    {
        var n = input.Length;
        if (n == 0 && kind is not (MutationKind.Extend or MutationKind.Splice))
        {
            kind = MutationKind.Extend;
        }

        switch (kind)
        {
            case MutationKind.FlipBit:
            {
                var bit = random.Next(n * 8);
                description = $"flip bit {bit % 8} of byte {bit / 8}";
                return Mutations.FlipBit(input, bit);
            }

            case MutationKind.SetByte:
            {
                var at = random.Next(n);
                var value = random.Next(3) switch
                {
                    0 => (byte)0x00,
                    1 => (byte)0xFF,
                    _ => random.NextByte(),
                };
                if (value == input[at])
                {
                    value = (byte)~value;
                }

                description = $"set byte {at} to 0x{value:X2}";
                return Mutations.SetByte(input, at, value);
            }

            case MutationKind.Truncate:
            {
                // Cuts near the end (a torn write) are as likely as cuts anywhere.
                var length = random.OneIn(2) ? random.Next(n) : Math.Max(0, n - 1 - random.Next(Math.Min(n, 16)));
                description = $"truncate to {length} bytes";
                return Mutations.Truncate(input, length);
            }

            case MutationKind.Extend:
            {
                var count = random.OneIn(4) ? random.Next(1, 4096) : random.Next(1, 33);
                count = Math.Min(count, MaxLength - n);
                var tail = new byte[Math.Max(count, 0)];
                var fill = random.Next(4);
                switch (fill)
                {
                    case 1:
                        tail.AsSpan().Fill(0xFF);
                        break;
                    case 2:
                        random.Fill(tail);
                        break;
                    case 3 when n > 0:
                        for (var i = 0; i < tail.Length; i++)
                        {
                            tail[i] = input[(random.Next(n) + i) % n];
                        }

                        break;
                }

                description = $"extend by {tail.Length} bytes of {(fill switch { 1 => "0xFF", 2 => "random", 3 => "input", _ => "zeros" })}";
                return Mutations.Extend(input, tail);
            }

            case MutationKind.Splice:
            {
                var other = random.Pick(corpus);
                var cut = random.Next(n + 1);
                var otherCut = random.Next(other.Bytes.Length + 1);
                if (cut + other.Bytes.Length - otherCut > MaxLength)
                {
                    otherCut = other.Bytes.Length;
                }

                description = $"splice bytes 0..{cut} with {other.Name} from {otherCut}";
                return Mutations.Splice(input, cut, other.Bytes, otherCut);
            }

            case MutationKind.DuplicateChunk:
            {
                var from = random.Next(n);
                var length = 1 + random.Next(Math.Min(n - from, random.OneIn(2) ? 8 : 256));
                length = Math.Min(length, MaxLength - n);
                var at = random.Next(n + 1);
                description = $"copy {length} bytes at {from} to {at}";
                return Mutations.DuplicateChunk(input, from, Math.Max(length, 0), at);
            }

            case MutationKind.RemoveChunk:
            {
                var from = random.Next(n);
                var length = 1 + random.Next(Math.Min(n - from, random.OneIn(2) ? 8 : 256));
                description = $"remove {length} bytes at {from}";
                return Mutations.RemoveChunk(input, from, length);
            }

            case MutationKind.SetInteger:
            {
                var known = seed.Fields.Where(f => f.Kind != FieldKind.Varint && f.Offset < n).ToList();
                Field field;
                if (known.Count > 0 && !random.OneIn(4))
                {
                    field = random.Pick(known);
                }
                else
                {
                    var width = 1 << random.Next(4);
                    field = new Field(random.Next(n), width, random.OneIn(4) ? FieldKind.UIntBigEndian : FieldKind.UInt, "any");
                }

                var extremes = Mutations.IntegerExtremes(field.Width);
                var value = random.OneIn(5) ? Nudge(input, field, random) : random.Pick(extremes);
                description = $"set {field.Width}-byte {field.Kind} {field.Name} at {field.Offset} to {Show(value, field)}";
                return Mutations.SetInteger(input, field.Offset, field.Width, field.Kind == FieldKind.UIntBigEndian, value);
            }

            default:
            {
                var known = seed.Fields.Where(f => f.Kind == FieldKind.Varint && f.Offset < n).ToList();
                var at = known.Count > 0 && !random.OneIn(4) ? random.Pick(known).Offset : random.Next(n);
                var current = Mutations.ReadVarint(input, at);
                byte[] encoding;
                if (random.OneIn(5))
                {
                    encoding = random.Pick(Mutations.MalformedVarints(current));
                    description = $"replace the varint at {at} ({current}) with malformed {Convert.ToHexString(encoding)}";
                }
                else
                {
                    var value = random.Next(4) switch
                    {
                        0 => current + 1,
                        1 => current - 1,
                        _ => random.Pick(Mutations.VarintExtremes),
                    };
                    encoding = Mutations.EncodeVarint(value);
                    description = $"replace the varint at {at} ({current}) with {value}";
                }

                return Mutations.ReplaceVarint(input, at, encoding);
            }
        }
    }

    private static ulong Nudge(byte[] input, Field field, FuzzRandom random)
    {
        Span<byte> bytes = stackalloc byte[8];
        bytes.Clear();
        var n = Math.Min(field.Width, input.Length - field.Offset);
        input.AsSpan(field.Offset, n).CopyTo(bytes);
        var current = field.Kind == FieldKind.UIntBigEndian
            ? System.Buffers.Binary.BinaryPrimitives.ReadUInt64BigEndian(bytes) >> (8 * (8 - field.Width))
            : System.Buffers.Binary.BinaryPrimitives.ReadUInt64LittleEndian(bytes);
        return random.OneIn(2) ? current + 1 : current - 1;
    }

    private static string Show(ulong value, Field field) =>
        field.Kind == FieldKind.Int && field.Width == 8 ? ((long)value).ToString(System.Globalization.CultureInfo.InvariantCulture)
        : field.Kind == FieldKind.Int && field.Width == 4 ? ((int)(uint)value).ToString(System.Globalization.CultureInfo.InvariantCulture)
        : value.ToString(System.Globalization.CultureInfo.InvariantCulture);
}
