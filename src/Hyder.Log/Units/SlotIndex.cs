using Hyder.Log.Storage;

namespace Hyder.Log.Units;

/// <summary>
/// A unit's index: for each address it holds, where the slot is and what it holds. Each entry is
/// one 8-byte word in a page of 4,096 consecutive addresses; a page is allocated when its first
/// address arrives and dropped whole by a prefix trim. A unit that holds every address of its
/// range pays 8 bytes per address (the dictionary this replaces paid about 50, and copied itself
/// whole each time it grew: a long soak's unit grew by about 100 bytes per address).
/// </summary>
/// <remarks>
/// A word is 0 for "no entry", else <c>(location &lt;&lt; 2 | kind) + 1</c>. A unit that is one of
/// k stripes holds one address in k, so it pays 8k bytes per address it holds; the layouts this
/// project runs use one to a few chains. Not thread-safe: the unit calls it under its lock.
/// </remarks>
internal sealed class SlotIndex
{
    private const int PageBits = 12;
    private const int PageSize = 1 << PageBits;
    private const long MaxLocation = (1L << 61) - 1;

    private readonly Dictionary<long, long[]> _pages = [];

    /// <summary>Addresses with an entry (counted on demand: tests and diagnostics only).</summary>
    public long Count => _pages.Values.Sum(page => (long)page.Count(word => word != 0));

    /// <summary>Pages allocated (each 32 KiB).</summary>
    public int Pages => _pages.Count;

    /// <summary>The entry of <paramref name="address"/>, if it has one.</summary>
    public bool TryGetValue(long address, out IndexEntry entry)
    {
        if (address >= 0 && _pages.TryGetValue(address >> PageBits, out var page) && page[address & (PageSize - 1)] is var word and not 0)
        {
            entry = new IndexEntry((word - 1) >>> 2, (SlotKind)((word - 1) & 3));
            return true;
        }

        entry = default;
        return false;
    }

    /// <summary>Sets the entry of <paramref name="address"/> (a trim replaces what was there).</summary>
    public void Set(long address, IndexEntry entry)
    {
        ArgumentOutOfRangeException.ThrowIfNegative(address);
        ArgumentOutOfRangeException.ThrowIfNegative(entry.Location);
        ArgumentOutOfRangeException.ThrowIfGreaterThan(entry.Location, MaxLocation);
        if ((byte)entry.Kind > 3)
        {
            throw new ArgumentOutOfRangeException(nameof(entry), entry.Kind, "a slot kind the index cannot hold");
        }

        var number = address >> PageBits;
        if (!_pages.TryGetValue(number, out var page))
        {
            page = new long[PageSize];
            _pages.Add(number, page);
        }

        page[address & (PageSize - 1)] = ((entry.Location << 2) | (long)entry.Kind) + 1;
    }

    /// <summary>Drops every entry of an address below <paramref name="before"/>.</summary>
    public void RemoveBelow(long before)
    {
        var boundary = before >> PageBits;
        foreach (var number in _pages.Keys.Where(n => n < boundary).ToList())
        {
            _pages.Remove(number);
        }

        if (_pages.TryGetValue(boundary, out var page))
        {
            Array.Clear(page, 0, (int)(before & (PageSize - 1)));
        }
    }
}

/// <summary>Where an address's slot is and what it holds.</summary>
internal readonly record struct IndexEntry(long Location, SlotKind Kind);
