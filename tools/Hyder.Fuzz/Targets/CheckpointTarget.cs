using Hyder.Fuzz.Engine;
using Hyder.Server.Core;
using Hyder.Tree.Memory;
using Hyder.Tree.Serialization;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// Checkpoint blocks as a restarting server loads them (Startup.FindCheckpointAsync):
/// <see cref="CheckpointDecoder.ReadSequence"/>, the format's loader, then the server's
/// <see cref="CheckpointInfo.Decode"/> of the metadata. Two formats, two targets:
/// <see cref="ByReference"/> (format 3: <see cref="CheckpointDecoder.Load"/> with the intentions of
/// the log) and <see cref="SelfContained"/> (format 4: <see cref="CheckpointReader.Load"/> from the
/// checkpoint's own parts).
/// </summary>
internal sealed class CheckpointTarget : FuzzTarget
{
    private delegate void Loader(byte[] final, ReadOnlyMemory<byte>[] parts, NodePool pool, out byte[] metadata);

    private readonly NodePool _pool = new(1 << 12);
    private readonly Loader _load;
    private readonly Func<List<EncodedBlocks>> _corpus;

    private CheckpointTarget(string name, string description, Loader load, Func<List<EncodedBlocks>> corpus)
    {
        Name = name;
        Description = description;
        _load = load;
        _corpus = corpus;
    }

    /// <summary>Format 3: nodes by reference to the intentions that wrote them.</summary>
    public static CheckpointTarget ByReference() => new(
        "checkpoint",
        "CheckpointDecoder.ReadSequence and Load, then CheckpointInfo.Decode of its metadata",
        (byte[] final, ReadOnlyMemory<byte>[] parts, NodePool pool, out byte[] metadata) => CheckpointDecoder.Load(final, parts, TreeCorpus.Shared, pool, out metadata),
        () => TreeCorpus.Shared.Checkpoints);

    /// <summary>Format 4: every key and payload in the checkpoint's own blocks.</summary>
    public static CheckpointTarget SelfContained() => new(
        "checkpoint4",
        "CheckpointDecoder.ReadSequence and CheckpointReader.Load of a format-4 checkpoint, then CheckpointInfo.Decode of its metadata",
        (byte[] final, ReadOnlyMemory<byte>[] parts, NodePool pool, out byte[] metadata) => CheckpointReader.Load(final, parts, pool, out metadata),
        () => TreeCorpus.Shared.SelfContainedCheckpoints);

    public override string Name { get; }

    public override string Description { get; }

    public override IReadOnlyList<Type> Documented { get; } = [typeof(IntentionFormatException), typeof(FormatException)];

    public override bool HasFixup => true;

    public override void Fixup(byte[] input, Seed seed) => TreeCorpus.Reseal(input);

    public override void Execute(byte[] input, Seed seed)
    {
        var at = (BlockSeed)seed.Context!;
        var (final, parts) = at.Blocks.With(at.Index, input);
        CheckpointDecoder.ReadSequence(final);
        _load(final, parts, _pool, out var metadata);
        CheckpointInfo.Decode(metadata);
    }

    protected override IEnumerable<Seed> BuildCorpus() => TreeCorpus.Seeds(_corpus());
}
