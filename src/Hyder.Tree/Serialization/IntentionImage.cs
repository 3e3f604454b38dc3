namespace Hyder.Tree.Serialization;

/// <summary>
/// An intention decoded without a snapshot (recovery, checkpoint loading): the inside nodes by
/// post-order index, linked to each other, with every outside pointer left as the version it names.
/// Nodes carry no version (<see cref="NodeVersion.None"/>) and no owner; the node at index i of
/// the intention at position p has version <c>NodeVersion.Persistent(p, i)</c>.
/// </summary>
public sealed class IntentionImage
{
    private readonly Node[] _nodes;
    private readonly int[] _leftIndex;
    private readonly int[] _rightIndex;
    private readonly NodeVersion[] _leftVersion;
    private readonly NodeVersion[] _rightVersion;
    private readonly bool[] _copied;

    internal IntentionImage(
        IntentionHeader header, Node[] nodes, int[] leftIndex, int[] rightIndex, NodeVersion[] leftVersion, NodeVersion[] rightVersion,
        bool[] copied, DeleteEntry[] deletes, KeyRange[] rootRanges, int rootIndex, NodeVersion rootVersion)
    {
        Header = header;
        _nodes = nodes;
        _leftIndex = leftIndex;
        _rightIndex = rightIndex;
        _leftVersion = leftVersion;
        _rightVersion = rightVersion;
        _copied = copied;
        Deletes = deletes;
        RootRanges = rootRanges;
        RootIndex = rootIndex;
        RootVersion = rootVersion;
    }

    /// <summary>The final block's header fields.</summary>
    public IntentionHeader Header { get; }

    /// <summary>The inside nodes in post-order (the root, when inside, is last).</summary>
    public IReadOnlyList<Node> Nodes => _nodes;

    /// <summary>The nodes in stream order (post-order), as a span.</summary>
    internal ReadOnlySpan<Node> NodeSpan => _nodes;

    /// <summary>The delete list.</summary>
    public DeleteEntry[] Deletes { get; }

    /// <summary>Scanned ranges with no node to carry them.</summary>
    public KeyRange[] RootRanges { get; }

    /// <summary>Index of the root when it is an inside node; -1 otherwise.</summary>
    public int RootIndex { get; }

    /// <summary>The root's version when it lies outside; <see cref="NodeVersion.None"/> otherwise.</summary>
    public NodeVersion RootVersion { get; }

    /// <summary>Index of node <paramref name="index"/>'s left child when it is inside; -1 otherwise.</summary>
    public int LeftIndex(int index) => _leftIndex[index];

    /// <summary>Index of node <paramref name="index"/>'s right child when it is inside; -1 otherwise.</summary>
    public int RightIndex(int index) => _rightIndex[index];

    /// <summary>The version of node <paramref name="index"/>'s left child when it lies outside; none when null or inside.</summary>
    public NodeVersion LeftVersion(int index) => _leftVersion[index];

    /// <summary>The version of node <paramref name="index"/>'s right child when it lies outside; none when null or inside.</summary>
    public NodeVersion RightVersion(int index) => _rightVersion[index];

    /// <summary>True when node <paramref name="index"/> was copied from the snapshot node with its key (its <see cref="Node.Source"/>).</summary>
    public bool IsCopied(int index) => _copied[index];
}
