using System.Diagnostics;

namespace Hyder.Tree.Meld;

// The Debug tier of meld's invariants (docs/CONTRIBUTING.md, "The invariants and where they are
// kept"): every method is [Conditional("DEBUG")], so a Release build calls none of them.
public sealed partial class MeldOperator
{
    /// <summary>
    /// Debug tier (O(log n) per call): a node meld retires must be the state's node for its key,
    /// or fresh. Retiring anything else would recycle a node twice or one still in use.
    /// </summary>
    [Conditional("DEBUG")]
    private void AssertInState(Node n, string where)
    {
        if (_state is null || IsFresh(n))
        {
            return;
        }

        var m = _state.Root;
        while (m is not null && m != n)
        {
            m = Keys.Compare(n, m) < 0 ? m.Left : m.Right;
        }

        Invariant.Assert(m is not null, $"{where} retires {Keys.Format(n.Key)} ({n.Vn}), which is not in state #{_state.Sequence}");
    }

    /// <summary>
    /// Debug tier: what the tree walk would have handed back (<see cref="RecycleIntention(Node?, bool)"/>
    /// from the intention's root, and publishing from each read-only subtree it swapped for its
    /// source, <see cref="RecordSwapped"/>), and every node the new state (<paramref name="newRoot"/>;
    /// null after an abort) reaches through its fresh nodes and the intention nodes it kept, for
    /// <see cref="AssertRecycledAsExpected"/>.
    /// </summary>
    [Conditional("DEBUG")]
    private void CollectListRecycles(Node? root, Node? newRoot, bool committed, ref (HashSet<Node> Walk, HashSet<Node> State)? expected)
    {
        var walk = new HashSet<Node>(ReferenceEqualityComparer.Instance);
        var pending = new Stack<(Node? Node, bool Swapped)>();
        pending.Push((root, false));
        foreach (var swapped in _swapped)
        {
            pending.Push((swapped, true));
        }

        _swapped.Clear();
        while (pending.TryPop(out var item))
        {
            var (n, swapped) = item;
            if (n is null || !Inside(n) || (committed && !swapped && (n.Flags & NodeFlags.Grafted) != 0))
            {
                continue;
            }

            walk.Add(n);
            pending.Push((n.Left, swapped));
            pending.Push((n.Right, swapped));
        }

        var state = new HashSet<Node>(ReferenceEqualityComparer.Instance);
        var reached = new Stack<Node?>();
        reached.Push(newRoot);
        while (reached.TryPop(out var n))
        {
            if (n is not null && (IsFresh(n) || Inside(n)))
            {
                state.Add(n);
                reached.Push(n.Left);
                reached.Push(n.Right);
            }
        }

        expected = (walk, state);
    }

    /// <summary>Debug tier: a read-only subtree publishing swapped for its source and left to the list walk.</summary>
    [Conditional("DEBUG")]
    private void RecordSwapped(Node n) => _swapped.Add(n);

    /// <summary>Debug tier: the list walk records what it hands back (<see cref="RecycleListed"/>).</summary>
    [Conditional("DEBUG")]
    private static void RecordRecycled(ref List<Node>? recycled) => recycled = [];

    /// <summary>
    /// Debug tier: the list walk handed back exactly what the tree walk would have, and nothing the
    /// new state reaches (that would put a node of the state in the pool).
    /// </summary>
    [Conditional("DEBUG")]
    private static void AssertRecycledAsExpected((HashSet<Node> Walk, HashSet<Node> State)? expected, List<Node>? recycled, Intention intention)
    {
        var (walk, state) = expected!.Value;
        Invariant.Assert(!recycled!.Exists(state.Contains), $"recycling {intention} from its node list handed back a node of the new state");
        Invariant.Assert(
            walk.Count == recycled.Count && recycled.TrueForAll(walk.Contains),
            $"recycling {intention} from its node list handed back {recycled.Count} nodes, the tree walk {walk.Count}");
    }

    /// <summary>
    /// Debug tier, O(nodes this meld made): meld's output is ordered, and as a state balanced.
    /// The walk descends only into this meld's fresh nodes: every other node of the output was
    /// checked when the meld that made it ran, or belongs to an intention the validator checked,
    /// and only its place is checked here (its key inside the bounds its new ancestors set). A
    /// fresh node also carries this operator's thread id and a sequence this meld handed out.
    /// </summary>
    /// <param name="root">The output's root: a new state's (final meld) or an output intention's (premeld).</param>
    /// <param name="state">True for a state: exact heights and balance at most 1 are checked too.</param>
    [Conditional("DEBUG")]
    private void AssertOutput(Node? root, bool state)
    {
        if (root is null)
        {
            return;
        }

        var pending = new Stack<(Node Node, byte[]? Low, byte[]? High)>();
        pending.Push((root, null, null));
        while (pending.Count > 0)
        {
            var (n, low, high) = pending.Pop();
            Invariant.Assert((n.Flags & NodeFlags.Pooled) == 0, $"meld's output reaches a pooled node ({n.Vn})");
            Invariant.Assert(
                (low is null || Keys.Compare(low, n.Key) < 0) && (high is null || Keys.Compare(n.Key, high) < 0),
                $"meld's output has {Keys.Format(n.Key)} outside ({(low is null ? "-" : Keys.Format(low))}, {(high is null ? "+" : Keys.Format(high))})");
            if (!IsFresh(n))
            {
                continue;
            }

            Invariant.Assert(n.Vn.Sequence < _sequence, $"fresh node {Keys.Format(n.Key)} has id {n.Vn}, beyond the next sequence {_sequence}");
            if (state)
            {
                var hl = Node.HeightOf(n.Left);
                var hr = Node.HeightOf(n.Right);
                Invariant.Assert(
                    n.Height == Math.Max(hl, hr) + 1 && Math.Abs(hl - hr) <= 1,
                    $"meld made {Keys.Format(n.Key)} with height {n.Height} over children of heights {hl} and {hr}");
            }

            if (n.Left is { } left)
            {
                pending.Push((left, low, n.Key));
            }

            if (n.Right is { } right)
            {
                pending.Push((right, n.Key, high));
            }
        }
    }
}
