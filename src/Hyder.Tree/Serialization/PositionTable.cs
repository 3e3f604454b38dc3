using System.Numerics;
using System.Runtime.CompilerServices;

namespace Hyder.Tree.Serialization;

/// <summary>
/// The distinct log positions an encoded stream's versions name (docs/intention-format.md, the
/// position table): collected, then sorted into the table the stream starts with, then looked up
/// by position for each version written. An open-addressing hash table, so collecting a position
/// and finding its index are each a probe or two, where a <c>HashSet</c> and a binary search over
/// the sorted table cost several times as much. A tree that has run for a while gives an
/// intention a few hundred distinct positions (docs/benchmarks/server.md, "The encoder's position table").
/// </summary>
/// <remarks>Reusable: <see cref="Clear"/> forgets the positions in time proportional to their number, not to the table's size.</remarks>
internal sealed class PositionTable : PositionIndex
{
    private const ulong Multiplier = 0x9E3779B97F4A7C15UL;

    /// <summary>Position + 1 of each occupied slot; 0 marks a free one.</summary>
    private long[] _slots;

    /// <summary>The sorted table's index of each occupied slot's position, once sealed.</summary>
    private int[] _indexes;

    /// <summary>The slot each position went to, in the order collected (for <see cref="Clear"/>).</summary>
    private int[] _used;

    /// <summary>The distinct positions: in the order collected, then sorted by <see cref="Seal"/>.</summary>
    private long[] _positions;

    /// <summary>The radix sort's second buffer, as long as <see cref="_positions"/>.</summary>
    private long[] _spare;

    private int _count;
    private int _shift;
    private bool _sealed;

    /// <summary>From this many positions on, <see cref="Seal"/> sorts by radix (a few linear passes) rather than by comparison.</summary>
    internal const int RadixFrom = 48;

    public PositionTable(int capacity = 256)
    {
        var size = (int)BitOperations.RoundUpToPowerOf2((uint)Math.Max(16, capacity * 2));
        _slots = new long[size];
        _indexes = new int[size];
        _shift = 64 - BitOperations.Log2((uint)size);
        _used = new int[Math.Max(8, capacity)];
        _positions = new long[Math.Max(8, capacity)];
        _spare = new long[_positions.Length];
    }

    /// <summary>Distinct positions collected.</summary>
    public int Count => _count;

    /// <summary>Collects the position of <paramref name="v"/> if it is persistent.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Add(NodeVersion v)
    {
        if (v.IsPersistent)
        {
            Add(v.Position);
        }
    }

    /// <summary>Collects <paramref name="position"/> (once, however often it is added).</summary>
    public void Add(long position)
    {
        if (_sealed)
        {
            ThrowHelper.ThrowInvalidOperation("the position table is sealed; clear it first");
        }

        var i = Probe(position, out var found);
        if (found)
        {
            return;
        }

        if ((_count + 1) * 2 > _slots.Length)
        {
            Grow();
            Add(position);
            return;
        }

        if (_count == _positions.Length)
        {
            Array.Resize(ref _positions, _count * 2);
            Array.Resize(ref _used, _count * 2);
            _spare = new long[_positions.Length];
        }

        _slots[i] = position + 1;
        _used[_count] = i;
        _positions[_count++] = position;
    }

    /// <summary>Sorts the positions into the table the stream starts with, and numbers them.</summary>
    public ReadOnlySpan<long> Seal()
    {
        var table = _positions.AsSpan(0, _count);
        if (_count >= RadixFrom)
        {
            RadixSort(table);
        }
        else
        {
            table.Sort();
        }

        for (var k = 0; k < table.Length; k++)
        {
            _indexes[Find(table[k])] = k;
        }

        _sealed = true;
        return table;
    }

    /// <summary>The sorted table <see cref="Seal"/> made.</summary>
    public ReadOnlySpan<long> Sorted
    {
        get
        {
            if (!_sealed)
            {
                ThrowHelper.ThrowInvalidOperation("the position table is not sealed");
            }

            return _positions.AsSpan(0, _count);
        }
    }

    /// <summary>The index of <paramref name="position"/> in the sealed table.</summary>
    /// <exception cref="InvalidOperationException">The table is not sealed, or the position was never collected.</exception>
    public override int IndexOf(long position)
    {
        if (!_sealed)
        {
            ThrowHelper.ThrowInvalidOperation("the position table is not sealed");
        }

        return _indexes[Find(position)];
    }

    /// <summary>Forgets every position, keeping the storage.</summary>
    public void Clear()
    {
        foreach (var i in _used.AsSpan(0, _count))
        {
            _slots[i] = 0;
        }

        _count = 0;
        _sealed = false;
    }

    /// <summary>Radix sort by the offset from the smallest position (<see cref="ByteRadix"/>).</summary>
    private void RadixSort(Span<long> keys)
    {
        var (min, max) = ByteRadix.Range(keys);
        var sorted = ByteRadix.Sort(keys, _spare, min, 0, ByteRadix.BitsOf((ulong)(max - min)));
        if (!sorted.Overlaps(keys))
        {
            sorted.CopyTo(keys);
        }
    }

    private int Slot(long position) => (int)(((ulong)position * Multiplier) >> _shift);

    /// <summary>The slot holding <paramref name="position"/> (<paramref name="found"/>), or the free slot where it would go.</summary>
    private int Probe(long position, out bool found)
    {
        var key = position + 1;
        var mask = _slots.Length - 1;
        var i = Slot(position);
        while (true)
        {
            var s = _slots[i];
            if (s == key || s == 0)
            {
                found = s == key;
                return i;
            }

            i = (i + 1) & mask;
        }
    }

    private int Find(long position)
    {
        var i = Probe(position, out var found);
        if (!found)
        {
            ThrowHelper.ThrowInvalidOperation($"log position {position} is not in the position table");
        }

        return i;
    }

    private void Grow()
    {
        var positions = _positions.AsSpan(0, _count).ToArray();
        _slots = new long[_slots.Length * 2];
        _indexes = new int[_slots.Length];
        _shift--;
        _count = 0;
        foreach (var p in positions)
        {
            Add(p);
        }
    }
}
