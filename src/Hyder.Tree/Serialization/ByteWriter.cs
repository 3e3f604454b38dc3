using System.Runtime.CompilerServices;

namespace Hyder.Tree.Serialization;

/// <summary>A growable byte buffer with the codec's primitive writes (LEB128 varints).</summary>
internal sealed class ByteWriter(int capacity = 256)
{
    private byte[] _buffer = new byte[Math.Max(16, capacity)];

    /// <summary>Bytes written.</summary>
    public int Length { get; private set; }

    /// <summary>Forgets what was written; the buffer is kept for the next use.</summary>
    public void Reset() => Length = 0;

    /// <summary>The bytes written so far.</summary>
    public ReadOnlySpan<byte> Written => _buffer.AsSpan(0, Length);

    /// <summary>Forgets what was written (the buffer is kept for reuse).</summary>
    public void Clear() => Length = 0;

    public void Byte(byte b)
    {
        Ensure(1);
        _buffer[Length++] = b;
    }

    /// <summary>An unsigned LEB128 varint: 7 bits a byte, low first, high bit set on all but the last.</summary>
    public void Varint(ulong v)
    {
        Ensure(10);
        Length = Varint(_buffer, Length, v);
    }

    /// <summary>A varint length followed by the bytes.</summary>
    public void Bytes(ReadOnlySpan<byte> bytes)
    {
        Varint((ulong)bytes.Length);
        Raw(bytes);
    }

    /// <summary>A 32-bit little-endian value.</summary>
    public void U32(uint v)
    {
        Ensure(4);
        System.Buffers.Binary.BinaryPrimitives.WriteUInt32LittleEndian(_buffer.AsSpan(Length), v);
        Length += 4;
    }

    /// <summary>A 64-bit little-endian value.</summary>
    public void U64(ulong v)
    {
        Ensure(8);
        System.Buffers.Binary.BinaryPrimitives.WriteUInt64LittleEndian(_buffer.AsSpan(Length), v);
        Length += 8;
    }

    /// <summary>Zero bytes (room for a header written later).</summary>
    public void Zeros(int count)
    {
        Ensure(count);
        _buffer.AsSpan(Length, count).Clear();
        Length += count;
    }

    public void Raw(ReadOnlySpan<byte> bytes)
    {
        Ensure(bytes.Length);
        bytes.CopyTo(_buffer.AsSpan(Length));
        Length += bytes.Length;
    }

    /// <summary>
    /// Room for at least <paramref name="max"/> more bytes, for a record written straight into it
    /// with the static writes below and then passed with <see cref="Advance"/>: one bounds check
    /// per record instead of one per field.
    /// </summary>
    public Span<byte> Reserve(int max)
    {
        Ensure(max);
        return _buffer.AsSpan(Length);
    }

    /// <summary>Takes <paramref name="count"/> bytes written into the span <see cref="Reserve"/> gave as written.</summary>
    public void Advance(int count)
    {
        if ((uint)count > (uint)(_buffer.Length - Length))
        {
            ThrowHelper.ThrowArgumentOutOfRange(nameof(count), $"{count} bytes is more than the {_buffer.Length - Length} reserved");
        }

        Length += count;
    }

    /// <summary>
    /// Writes an unsigned LEB128 varint of <paramref name="v"/> at <paramref name="at"/> in
    /// <paramref name="s"/>; returns the offset past it (a returned offset stays in a register,
    /// where one passed by reference would go through memory at every byte).
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Varint(Span<byte> s, int at, ulong v)
    {
        while (v >= 0x80)
        {
            s[at++] = (byte)(v | 0x80);
            v >>= 7;
        }

        s[at] = (byte)v;
        return at + 1;
    }

    /// <summary>Writes a varint length and <paramref name="bytes"/> at <paramref name="at"/> in <paramref name="s"/>; returns the offset past them.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Bytes(Span<byte> s, int at, ReadOnlySpan<byte> bytes)
    {
        at = Varint(s, at, (ulong)bytes.Length);
        bytes.CopyTo(s[at..]);
        return at + bytes.Length;
    }

    /// <summary>Bytes a varint of <paramref name="v"/> takes.</summary>
    public static int VarintSize(ulong v)
    {
        var n = 1;
        while (v >= 0x80)
        {
            v >>= 7;
            n++;
        }

        return n;
    }

    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private void Ensure(int more)
    {
        if (Length + more > _buffer.Length)
        {
            Grow(more);
        }
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Grow(int more) => Array.Resize(ref _buffer, Math.Max(_buffer.Length * 2, Length + more));
}
