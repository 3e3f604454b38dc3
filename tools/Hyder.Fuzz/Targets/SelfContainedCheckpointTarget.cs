using Hyder.Fuzz.Engine;
using Hyder.Server.Core;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// Self-contained (format 4) checkpoint blocks as a restarting server loads them:
/// <see cref="CheckpointDecoder.ReadSequence"/>, <see cref="CheckpointReader.Load"/> from the
/// checkpoint's own parts, then the server's <see cref="CheckpointInfo.Decode"/> of the metadata.
/// </summary>
internal sealed class SelfContainedCheckpointTarget : FuzzTarget
{
    private readonly NodePool _pool = new(1 << 12);

    public override string Name => "checkpoint4";

    public override string Description => "CheckpointDecoder.ReadSequence and CheckpointReader.Load of a format-4 checkpoint, then CheckpointInfo.Decode of its metadata";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(IntentionFormatException), typeof(FormatException)];

    public override bool HasFixup => true;

    public override void Fixup(byte[] input, Seed seed) => TreeCorpus.Reseal(input);

    public override void Execute(byte[] input, Seed seed)
    {
        var at = (BlockSeed)seed.Context!;
        var (final, parts) = at.Blocks.With(at.Index, input);
        CheckpointDecoder.ReadSequence(final);
        CheckpointReader.Load(final, parts, _pool, out var metadata);
        CheckpointInfo.Decode(metadata);
    }

    protected override IEnumerable<Seed> BuildCorpus() => TreeCorpus.Seeds(TreeCorpus.Shared.SelfContainedCheckpoints);
}
