using Hyder.Fuzz.Engine;
using Hyder.Server.Core;
using Hyder.Tree.Pipeline;

namespace Hyder.Fuzz.Targets;

/// <summary>The server's checkpoint metadata (barrier, sequences, resume position) on its own: <see cref="CheckpointInfo.Decode"/>.</summary>
internal sealed class CheckpointInfoTarget : FuzzTarget
{
    public override string Name => "checkpoint-info";

    public override string Description => "CheckpointInfo.Decode (the server's metadata stored in a checkpoint)";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(FormatException)];

    public override void Execute(byte[] input, Seed seed) => CheckpointInfo.Decode(input);

    protected override IEnumerable<Seed> BuildCorpus()
    {
        Field[] fields =
        [
            new(0, 1, FieldKind.UInt, "version"),
            new(1, 8, FieldKind.Int, "barrier"),
            new(9, 8, FieldKind.Int, "state sequence"),
            new(17, 8, FieldKind.Int, "resume position"),
            new(41, 4, FieldKind.Int, "premeld thread count"),
        ];
        yield return new Seed("no premeld", new CheckpointInfo(10, 9, 11, new StageSequences(5, [], 0)).Encode(), fields);
        yield return new Seed("two premeld threads", new CheckpointInfo(1000, 998, 1020, new StageSequences(77, [3, 4], 9)).Encode(), fields);
        yield return new Seed("corpus metadata", TreeCorpus.Shared.CheckpointMetadata, fields);
    }
}
