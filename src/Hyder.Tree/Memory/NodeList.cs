using System.Runtime.CompilerServices;

namespace Hyder.Tree.Memory;

/// <summary>A growable list of nodes that keeps its array when cleared: scratch for meld and retire lists.</summary>
public sealed class NodeList
{
    private Node[] _items;

    /// <summary>Creates a list with room for <paramref name="capacity"/> nodes.</summary>
    public NodeList(int capacity = 64) => _items = new Node[Math.Max(4, capacity)];

    /// <summary>Number of nodes held.</summary>
    public int Count { get; private set; }

    /// <summary>The node at <paramref name="index"/>.</summary>
    public Node this[int index] => _items[index];

    /// <summary>Appends a node.</summary>
    [MethodImpl(MethodImplOptions.AggressiveInlining)]
    public void Add(Node node)
    {
        if (Count == _items.Length)
        {
            Grow();
        }

        _items[Count++] = node;
    }

    [MethodImpl(MethodImplOptions.NoInlining)]
    private void Grow() => Array.Resize(ref _items, _items.Length * 2);

    /// <summary>Forgets every node (the array is kept).</summary>
    public void Clear()
    {
        Array.Clear(_items, 0, Count);
        Count = 0;
    }

    /// <summary>
    /// Hands every node to <paramref name="pool"/> and clears the list; with
    /// <paramref name="values"/>, a node whose payload dies with it (<see cref="Node.PayloadDies"/>)
    /// gives its payload back to that pool first.
    /// </summary>
    public void ReturnAllTo(NodePool pool, ValuePool? values = null)
    {
        for (var i = 0; i < Count; i++)
        {
            var n = _items[i];
            if (values is not null && n.PayloadDies)
            {
                values.Return(n.Payload);
            }

            pool.Return(n);
            _items[i] = null!;
        }

        Count = 0;
    }
}
