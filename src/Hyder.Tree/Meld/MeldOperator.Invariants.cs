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
