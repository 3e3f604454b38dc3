namespace Hyder.Server.Follower;

/// <summary>
/// Intention parts the reader met before their final block, by log position, until the final
/// block takes them. Bounded: past <see cref="Capacity"/> the oldest are forgotten (a final block
/// that comes much later reads its parts from the log again).
/// </summary>
internal sealed class PartStash
{
    /// <summary>Parts kept at most.</summary>
    public const int Capacity = 1 << 12;

    private readonly Dictionary<long, ReadOnlyMemory<byte>> _parts = [];
    private readonly Queue<long> _order = new();

    /// <summary>Parts held now.</summary>
    public int Count => _parts.Count;

    /// <summary>Keeps <paramref name="block"/> (which must outlive the call: the caller copies a borrowed buffer) for <paramref name="position"/>.</summary>
    public void Add(long position, ReadOnlyMemory<byte> block)
    {
        _parts[position] = block;
        _order.Enqueue(position);
        while (_order.Count > Capacity)
        {
            _parts.Remove(_order.Dequeue());
        }
    }

    /// <summary>Takes the part at <paramref name="position"/> out, if it is held.</summary>
    public bool TryTake(long position, out ReadOnlyMemory<byte> block) => _parts.Remove(position, out block);

    /// <summary>Forgets the part at <paramref name="position"/> (its intention needs it no more).</summary>
    public void Forget(long position) => _parts.Remove(position);
}
