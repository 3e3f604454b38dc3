using Hyder.Fuzz.Engine;
using Hyder.Server.Core;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// Checkpoint blocks as a restarting server loads them (Startup.FindCheckpointAsync):
/// <see cref="CheckpointDecoder.ReadSequence"/>, <see cref="CheckpointDecoder.Load"/> with the
/// intentions of the log, then the server's <see cref="CheckpointInfo.Decode"/> of the metadata.
/// </summary>
internal sealed class CheckpointTarget : FuzzTarget
{
    private readonly NodePool _pool = new(1 << 12);

    public override string Name => "checkpoint";

    public override string Description => "CheckpointDecoder.ReadSequence and Load, then CheckpointInfo.Decode of its metadata";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(IntentionFormatException), typeof(FormatException)];

    public override bool HasFixup => true;

    public override void Fixup(byte[] input, Seed seed) => TreeCorpus.Reseal(input);

    public override void Execute(byte[] input, Seed seed)
    {
        var at = (BlockSeed)seed.Context!;
        var (final, parts) = at.Blocks.With(at.Index, input);
        CheckpointDecoder.ReadSequence(final);
        CheckpointDecoder.Load(final, parts, TreeCorpus.Shared, _pool, out var metadata);
        CheckpointInfo.Decode(metadata);
    }

    protected override IEnumerable<Seed> BuildCorpus() => TreeCorpus.Seeds(TreeCorpus.Shared.Checkpoints);
}
