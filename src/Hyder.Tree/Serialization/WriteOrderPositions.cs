using System.Numerics;
using System.Runtime.CompilerServices;

namespace Hyder.Tree.Serialization;

/// <summary>
/// The position table of an encoding that knows, before it writes anything, every persistent
/// version it will write and in which order: an intention (<see cref="IntentionEncoder"/>). Each
/// reference to a position is collected in write order, duplicates included; <see cref="Seal"/>
/// sorts the references by position, numbers the distinct positions, and keeps each reference's
/// number, so that writing a version reads the next number instead of probing a hash table. An
/// 8R2W intention holds about 350 references to about 185 positions: sorting every reference once
/// costs less than the two hash probes per reference of <see cref="PositionTable"/> and its sort of
/// the distinct ones (docs/benchmarks/server.md, "The encoder's references in write order").
/// </summary>
/// <remarks>
/// The writer must ask for the positions in the order they were collected; <see cref="IndexOf"/>
/// checks each against the table and refuses one out of order, and <see cref="AllWritten"/> says
/// whether every reference was written. Reusable: <see cref="Clear"/> keeps the storage.
/// </remarks>
internal sealed class WriteOrderPositions : PositionIndex
{
    /// <summary>From this many references on, <see cref="Seal"/> sorts by radix rather than by comparison.</summary>
    internal const int RadixFrom = 48;

    /// <summary>The position of each reference, in write order.</summary>
    private long[] _references;

    /// <summary>
    /// The sort's keys: each reference's offset from the smallest position, shifted left past the
    /// bits that hold the reference's number, so that one word sorts both and a radix pass moves one.
    /// </summary>
    private long[] _keys;

    /// <summary>The radix sort's second buffer.</summary>
    private long[] _spare;

    /// <summary>The comparison sort's reference numbers.</summary>
    private int[] _numbers;

    /// <summary>Each reference's index in the sealed table.</summary>
    private int[] _indexOfReference;

    /// <summary>The distinct positions, sorted, once sealed.</summary>
    private long[] _positions;

    private int _referenceCount;
    private int _count;
    private int _next;
    private bool _sealed;

    public WriteOrderPositions(int capacity = 512)
    {
        capacity = Math.Max(8, capacity);
        _references = new long[capacity];
        _keys = new long[capacity];
        _spare = new long[capacity];
        _numbers = new int[capacity];
        _indexOfReference = new int[capacity];
        _positions = new long[capacity];
    }

    /// <summary>
    /// The most bits a key may take: an offset and a reference number wider than this together
    /// are sorted by comparison with the numbers beside them. Tests lower it to reach that path,
    /// which an intention reaches only with millions of references across most of the log.
    /// </summary>
    internal int PackedBits { get; set; } = 63;

    /// <summary>Distinct positions, once sealed.</summary>
    public int Count => _sealed ? _count : ThrowNotSealed();

    /// <summary>References collected.</summary>
    public int References => _referenceCount;

    /// <summary>True when the writer has asked for every reference collected, in order.</summary>
    public bool AllWritten => _sealed && _next == _referenceCount;

    /// <summary>Collects a reference to the position of <paramref name="v"/> if it is persistent.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Add(NodeVersion v)
    {
        if (v.IsPersistent)
        {
            Add(v.Position);
        }
    }

    /// <summary>Collects a reference to <paramref name="position"/>, the next the writer will ask for.</summary>
    public void Add(long position)
    {
        if (_sealed)
        {
            ThrowHelper.ThrowInvalidOperation("the position table is sealed; clear it first");
        }

        if (_referenceCount == _references.Length)
        {
            Grow();
        }

        _references[_referenceCount++] = position;
    }

    /// <summary>Sorts the distinct positions into the table the stream starts with, and numbers every reference.</summary>
    public ReadOnlySpan<long> Seal()
    {
        if (_sealed)
        {
            ThrowHelper.ThrowInvalidOperation("the position table is already sealed");
        }

        _sealed = true;
        _next = 0;
        var n = _referenceCount;
        if (n == 0)
        {
            _count = 0;
            return [];
        }

        var references = _references.AsSpan(0, n);
        var (min, max) = ByteRadix.Range(references);

        var numberBits = 32 - BitOperations.LeadingZeroCount((uint)n);
        var offsetBits = ByteRadix.BitsOf((ulong)(max - min));
        if (numberBits + offsetBits > PackedBits)
        {
            SealByComparison(references);
        }
        else
        {
            var keys = _keys.AsSpan(0, n);
            for (var i = 0; i < n; i++)
            {
                keys[i] = ((references[i] - min) << numberBits) | (long)i;
            }

            if (n >= RadixFrom)
            {
                keys = ByteRadix.Sort(keys, _spare, 0, numberBits, offsetBits);
            }
            else
            {
                keys.Sort();
            }

            var mask = (1L << numberBits) - 1;
            var count = 0;
            var last = -1L;
            foreach (var k in keys)
            {
                var offset = k >> numberBits;
                if (offset != last)
                {
                    _positions[count++] = min + offset;
                    last = offset;
                }

                _indexOfReference[(int)(k & mask)] = count - 1;
            }

            _count = count;
        }

        return _positions.AsSpan(0, _count);
    }

    /// <summary>The sealed table's index of the next reference, which must be to <paramref name="position"/>.</summary>
    /// <exception cref="InvalidOperationException">The table is not sealed, or the writer asked for more references than were collected or for another position than the next collected.</exception>
    public override int IndexOf(long position)
    {
        if (!_sealed)
        {
            ThrowNotSealed();
        }

        if (_next == _referenceCount)
        {
            ThrowHelper.ThrowInvalidOperation($"log position {position} is written beyond the {_referenceCount} references collected");
        }

        var index = _indexOfReference[_next];
        if (_positions[index] != position)
        {
            ThrowHelper.ThrowInvalidOperation($"reference {_next} is written as log position {position}, but was collected as {_positions[index]}: the writer's order is not the collector's");
        }

        _next++;
        return index;
    }

    /// <summary>Forgets every reference, keeping the storage.</summary>
    public void Clear()
    {
        _referenceCount = 0;
        _count = 0;
        _next = 0;
        _sealed = false;
    }

    /// <summary>The general path: the positions sorted by comparison, each beside its reference number.</summary>
    private void SealByComparison(Span<long> references)
    {
        var n = references.Length;
        var keys = _keys.AsSpan(0, n);
        var numbers = _numbers.AsSpan(0, n);
        references.CopyTo(keys);
        for (var i = 0; i < n; i++)
        {
            numbers[i] = i;
        }

        keys.Sort(numbers);
        var count = 0;
        for (var i = 0; i < n; i++)
        {
            if (count == 0 || keys[i] != _positions[count - 1])
            {
                _positions[count++] = keys[i];
            }

            _indexOfReference[numbers[i]] = count - 1;
        }

        _count = count;
    }

    private void Grow()
    {
        var size = _references.Length * 2;
        Array.Resize(ref _references, size);
        _keys = new long[size];
        _spare = new long[size];
        _numbers = new int[size];
        _indexOfReference = new int[size];
        _positions = new long[size];
    }

    private static int ThrowNotSealed()
    {
        ThrowHelper.ThrowInvalidOperation("the position table is not sealed");
        return 0;
    }
}
