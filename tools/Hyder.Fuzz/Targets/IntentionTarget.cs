using Hyder.Fuzz.Engine;
using Hyder.Server.Follower;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// Intention blocks as a transaction server reads them from the log: the reader's
/// <see cref="IntentionDecoder.ReadHeader"/> on the final block and its
/// <see cref="IntentionReferences.Check"/> (read as ordinal <see cref="ReadOrdinal"/> at
/// <see cref="ReadPosition"/>, group meld on), then a deserializer's
/// <see cref="IntentionDecoder.Decode"/> against the snapshot, and the snapshot-free
/// <see cref="IntentionDecoder.DecodeImage"/> a checkpoint load uses. One block of a valid
/// intention is mutated (the final block or one part); the others stay as written.
/// </summary>
internal sealed class IntentionTarget : FuzzTarget
{
    private readonly NodePool _pool = new(1 << 12);

    public override string Name => "intention";

    public override string Description => "IntentionDecoder.ReadHeader, Decode and DecodeImage (BlockHeader.TryParse, the chunk layer, node codec, reference resolution)";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(IntentionFormatException)];

    /// <summary>
    /// The ordinal a server reads the sample intentions at: the second of a group-meld pair, two
    /// after the snapshot they ran on at least, so a mutated snapshot can name its own pair's first.
    /// </summary>
    public static long ReadOrdinal => (TreeCorpus.Shared.Snapshot.Sequence + 3) & ~1L;

    /// <summary>The log position a server reads the final blocks at: after every part position of the corpus.</summary>
    public const long ReadPosition = 2_000_000;

    public override bool HasFixup => true;

    public override void Fixup(byte[] input, Seed seed) => TreeCorpus.Reseal(input);

    public override void Execute(byte[] input, Seed seed)
    {
        var at = (BlockSeed)seed.Context!;
        var (final, parts) = at.Blocks.With(at.Index, input);
        var snapshot = TreeCorpus.Shared.Snapshot;
        var header = IntentionDecoder.ReadHeader(final);
        if (IntentionReferences.Check(header, ReadOrdinal, ReadPosition, groupMeld: true) is { } misplaced)
        {
            FuzzRejectionException.Throw(misplaced);
        }

        if (header.SnapshotSequence != snapshot.Sequence)
        {
            // A server decodes against the state the header names; this corpus keeps one.
            FuzzRejectionException.Throw($"names snapshot #{header.SnapshotSequence}, which this replica does not keep");
        }

        var intention = IntentionDecoder.Decode(final, parts, snapshot, _pool);
        intention.ReleasePins();
        IntentionDecoder.DecodeImage(final, parts, _pool);
    }

    protected override IEnumerable<Seed> BuildCorpus() => TreeCorpus.Seeds(TreeCorpus.Shared.Intentions);
}
