namespace Hyder.Tree.Serialization;

/// <summary>
/// What a stream's writer asks of its position table: the index in the sealed table of the log
/// position a persistent version names (docs/intention-format.md, the position table).
/// </summary>
internal abstract class PositionIndex
{
    /// <summary>The index of <paramref name="position"/> in the sealed table.</summary>
    public abstract int IndexOf(long position);
}
