using System.Buffers.Binary;
using System.Runtime.CompilerServices;

namespace Hyder.Tree;

/// <summary>Keys are byte strings in ordinal (unsigned lexicographic) order.</summary>
public static class Keys
{
    /// <summary>Compares two keys ordinally.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Compare(byte[] a, byte[] b) => a.AsSpan().SequenceCompareTo(b);

    /// <summary>Compares two keys ordinally.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Compare(ReadOnlySpan<byte> a, ReadOnlySpan<byte> b) => a.SequenceCompareTo(b);

    /// <summary>The first 8 bytes of a key as a big-endian number, zero-padded; orders like the key when unequal.</summary>
    public static ulong Prefix(ReadOnlySpan<byte> key)
    {
        if (key.Length >= 8)
        {
            return BinaryPrimitives.ReadUInt64BigEndian(key);
        }

        Span<byte> buf = stackalloc byte[8];
        buf.Clear();
        key.CopyTo(buf);
        return BinaryPrimitives.ReadUInt64BigEndian(buf);
    }

    /// <summary>Compares two nodes' keys, by prefix first.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Compare(Node a, Node b)
    {
        if (a.KeyPrefix != b.KeyPrefix)
        {
            return a.KeyPrefix < b.KeyPrefix ? -1 : 1;
        }

        return CompareTail(a.Key, a.KeyLength, b.Key, b.KeyLength);
    }

    /// <summary>Compares a key (with its prefix) to a node's key, by prefix first.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public static int Compare(byte[] key, ulong prefix, Node n)
    {
        if (prefix != n.KeyPrefix)
        {
            return prefix < n.KeyPrefix ? -1 : 1;
        }

        return CompareTail(key, key.Length, n.Key, n.KeyLength);
    }

    /// <summary>
    /// Compares two keys whose prefixes are equal. Keys of up to 8 bytes are then told apart by
    /// their lengths alone (the prefix pads with zeros), which the caller passes so that neither
    /// array, cold in the cache, is read.
    /// </summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    private static int CompareTail(byte[] a, int aLength, byte[] b, int bLength) =>
        aLength <= 8 && bLength <= 8 ? aLength.CompareTo(bLength) : CompareLong(a, b);

    /// <remarks>
    /// The same array is the same key: a copied node shares its source's key array (meld compares an
    /// intention's copy with the state's node it came from), and that array is cold in the cache.
    /// </remarks>
    [MethodImpl(MethodImplOptions.NoInlining)]
    private static int CompareLong(byte[] a, byte[] b) =>
        ReferenceEquals(a, b) ? 0 : a.AsSpan().SequenceCompareTo(b);

    /// <summary>The node with <paramref name="key"/> in the tree under <paramref name="root"/>, or null.</summary>
    public static Node? Find(Node? root, byte[] key)
    {
        var visits = 0;
        return Find(root, key, ref visits);
    }

    /// <summary>The node with <paramref name="key"/> under <paramref name="root"/>, or null, counting the nodes visited.</summary>
    public static Node? Find(Node? root, byte[] key, ref int visits)
    {
        var prefix = Prefix(key);
        var n = root;
        while (n is not null)
        {
            visits++;
            var c = Compare(key, prefix, n);
            if (c == 0)
            {
                return n;
            }

            n = c < 0 ? n.Left : n.Right;
        }

        return null;
    }

    /// <summary>A readable form of a key for error messages and dumps.</summary>
    public static string Format(ReadOnlySpan<byte> key) => key.Length == 0 ? "<empty>" : Convert.ToHexString(key);

    /// <summary>Orders keys for sorted collections.</summary>
    public static IComparer<byte[]> Comparer { get; } = Comparer<byte[]>.Create(static (a, b) => Compare(a, b));
}
