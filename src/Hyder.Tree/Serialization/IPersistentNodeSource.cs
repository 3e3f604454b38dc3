namespace Hyder.Tree.Serialization;

/// <summary>Where a checkpoint loader reads the intentions whose nodes a state still uses: the log.</summary>
public interface IPersistentNodeSource
{
    /// <summary>The final block and the parts of the intention whose final block is at <paramref name="position"/>.</summary>
    (ReadOnlyMemory<byte> Final, IReadOnlyList<ReadOnlyMemory<byte>> Parts) ReadIntention(long position);
}
