using Hyder.Tree.Memory;

namespace Hyder.Tree.Serialization;

/// <summary>
/// Rents nodes for one decode and hands them all back when the input turns out to be malformed;
/// with <paramref name="values"/>, the decoded values are copied into arrays of that pool.
/// </summary>
internal sealed class NodePoolLease(NodePool pool, ValuePool? values = null)
{
    private readonly List<Node> _rented = [];

    /// <summary>The value pool the decoded values go into, or null (ordinary arrays).</summary>
    public ValuePool? Values => values;

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
