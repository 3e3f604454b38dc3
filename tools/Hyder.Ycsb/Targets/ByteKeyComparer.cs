namespace Hyder.Ycsb.Targets;

/// <summary>Orders byte keys as unsigned bytes, shorter prefix first (the order of DESIGN §2 and of PostgreSQL's bytea).</summary>
internal sealed class ByteKeyComparer : IComparer<byte[]>, IEqualityComparer<byte[]>
{
    public static readonly ByteKeyComparer Instance = new();

    public int Compare(byte[]? x, byte[]? y) => x.AsSpan().SequenceCompareTo(y);

    public bool Equals(byte[]? x, byte[]? y) => x.AsSpan().SequenceEqual(y);

    public int GetHashCode(byte[] obj)
    {
        var hash = default(HashCode);
        hash.AddBytes(obj);
        return hash.ToHashCode();
    }
}
