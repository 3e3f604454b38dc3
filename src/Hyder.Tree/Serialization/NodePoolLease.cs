using Hyder.Tree.Memory;

namespace Hyder.Tree.Serialization;

/// <summary>Rents nodes for one decode and hands them all back when the input turns out to be malformed.</summary>
internal sealed class NodePoolLease(NodePool pool)
{
    private readonly List<Node> _rented = [];

    public Node Rent()
    {
        var n = pool.Rent();
        _rented.Add(n);
        return n;
    }

    /// <summary>The decode failed: every node goes back to the pool.</summary>
    public void ReturnAll()
    {
        foreach (var n in _rented)
        {
            pool.Return(n);
        }

        _rented.Clear();
    }
}
