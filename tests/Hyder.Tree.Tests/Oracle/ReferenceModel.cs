
namespace Hyder.Tree.Tests.Oracle;

/// <summary>
/// The reference anyone can read: a dictionary that applies committed transactions in log order,
/// keeping every key's history so that any older state can be asked for.
/// </summary>
internal sealed class ReferenceModel
{
    private readonly SortedDictionary<byte[], List<(long Ordinal, byte[]? Value)>> _history = new(Keys.Comparer);

    /// <summary>Every key ever written, in order.</summary>
    public IEnumerable<byte[]> AllKeys => _history.Keys;

    /// <summary>The value of <paramref name="key"/> after intentions up to <paramref name="ordinal"/>, or null when absent.</summary>
    public byte[]? ValueAt(byte[] key, long ordinal)
    {
        var (_, value) = EntryAt(key, ordinal);
        return value;
    }

    /// <summary>
    /// The version of <paramref name="key"/> after intentions up to <paramref name="ordinal"/>: the
    /// ordinal of the write that produced its value, or 0 when absent. Absence has one version:
    /// a key inserted and deleted again inside a conflict zone is unchanged.
    /// </summary>
    public long VersionAt(byte[] key, long ordinal)
    {
        var (writer, value) = EntryAt(key, ordinal);
        return value is null ? 0 : writer;
    }

    private (long, byte[]?) EntryAt(byte[] key, long ordinal)
    {
        if (!_history.TryGetValue(key, out var list))
        {
            return (0, null);
        }

        for (var i = list.Count - 1; i >= 0; i--)
        {
            if (list[i].Ordinal <= ordinal)
            {
                return list[i];
            }
        }

        return (0, null);
    }

    /// <summary>True when the key's version differs between the two states.</summary>
    public bool Changed(byte[] key, long from, long to) => VersionAt(key, from) != VersionAt(key, to);

    /// <summary>Records a committed write (null = delete) by intention <paramref name="ordinal"/>.</summary>
    public void Write(byte[] key, byte[]? value, long ordinal)
    {
        if (!_history.TryGetValue(key, out var list))
        {
            list = [];
            _history.Add(key, list);
        }

        list.Add((ordinal, value));
    }

    /// <summary>The contents after intentions up to <paramref name="ordinal"/>.</summary>
    public List<KeyValuePair<byte[], byte[]>> ContentsAt(long ordinal)
    {
        var result = new List<KeyValuePair<byte[], byte[]>>();
        foreach (var key in _history.Keys)
        {
            var v = ValueAt(key, ordinal);
            if (v is not null)
            {
                result.Add(new KeyValuePair<byte[], byte[]>(key, v));
            }
        }

        return result;
    }
}
