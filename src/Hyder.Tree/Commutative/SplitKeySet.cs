namespace Hyder.Tree.Commutative;

/// <summary>
/// The keys split in one phase (Doppel §5; docs/doppel.md, "Split phases"), sorted, immutable: a
/// state published inside the phase carries it (<see cref="DatabaseState.SplitKeys"/>), so an
/// executor knows which of the state's values may be behind the side table.
/// </summary>
public sealed class SplitKeySet
{
    private readonly byte[][] _keys;

    /// <summary>The set of <paramref name="keys"/> (distinct; any order).</summary>
    public SplitKeySet(IEnumerable<byte[]> keys)
    {
        ArgumentNullException.ThrowIfNull(keys);
        _keys = [.. keys];
        Array.Sort(_keys, Keys.Comparer);
        for (var i = 1; i < _keys.Length; i++)
        {
            if (Keys.Compare(_keys[i - 1], _keys[i]) == 0)
            {
                throw new ArgumentException($"split key {Keys.Format(_keys[i])} given twice", nameof(keys));
            }
        }
    }

    /// <summary>The keys in ascending order.</summary>
    public IReadOnlyList<byte[]> Items => _keys;

    /// <summary>How many keys are split.</summary>
    public int Count => _keys.Length;

    /// <summary>True when <paramref name="key"/> is split.</summary>
    public bool Contains(byte[] key) => Array.BinarySearch(_keys, key, Keys.Comparer) >= 0;

    /// <summary>True when some split key lies in <paramref name="range"/>.</summary>
    public bool Intersects(in KeyRange range)
    {
        foreach (var k in _keys)
        {
            if (range.Contains(k))
            {
                return true;
            }
        }

        return false;
    }

    /// <inheritdoc/>
    public override string ToString() => $"{_keys.Length} split key{(_keys.Length == 1 ? "" : "s")}";
}
