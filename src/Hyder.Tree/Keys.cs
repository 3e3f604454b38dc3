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

    /// <summary>A readable form of a key for error messages and dumps.</summary>
    public static string Format(ReadOnlySpan<byte> key) => key.Length == 0 ? "<empty>" : Convert.ToHexString(key);

    /// <summary>Orders keys for sorted collections.</summary>
    public static IComparer<byte[]> Comparer { get; } = Comparer<byte[]>.Create(static (a, b) => Compare(a, b));
}
