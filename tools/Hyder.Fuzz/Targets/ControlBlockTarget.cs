using System.Buffers.Binary;
using Hyder.Fuzz.Engine;
using Hyder.Server.Cluster;
using Hyder.Server.Core;
using Hyder.Tree.Serialization;

namespace Hyder.Fuzz.Targets;

/// <summary>
/// Any block read from the log, classified as a transaction server does (TransactionServer.Reader's
/// HandleAsync and ReadControl, Startup's settings check): the block header, then a control
/// record's kind and body (<see cref="BlockFormat.ReadControl"/>, <see cref="ControlRecord.TryDecode"/>,
/// <see cref="ClusterSettings.Decode"/>, the checkpoint marker's id), an intention's header, a
/// checkpoint's sequence.
/// </summary>
internal sealed class ControlBlockTarget : FuzzTarget
{
    public override string Name => "control-block";

    public override string Description => "Blocks.TryParse, BlockFormat.ReadControl, ControlRecord.TryDecode, ClusterSettings.Decode, marker ids, IntentionDecoder.ReadHeader, CheckpointDecoder.ReadSequence";

    public override IReadOnlyList<Type> Documented { get; } = [typeof(IntentionFormatException), typeof(FormatException)];

    public override bool HasFixup => true;

    public override void Fixup(byte[] input, Seed seed) => TreeCorpus.Reseal(input);

    public override void Execute(byte[] input, Seed seed)
    {
        if (!Blocks.TryParse(input, out var kind, out var error))
        {
            FuzzRejectionException.Throw(error);
        }

        switch (kind)
        {
            case BlockKind.Control:
                if (!ControlRecord.TryDecode(Blocks.ControlPayload(input), out var control, out var body))
                {
                    FuzzRejectionException.Throw("a control record of an unknown kind");
                }

                if (control == ControlKind.Settings)
                {
                    ClusterSettings.Decode(body);
                }
                else if (control == ControlKind.CheckpointMarker && body.Length >= 8)
                {
                    _ = BitConverter.ToUInt64(body);
                }

                break;
            case BlockKind.Intention:
                IntentionDecoder.ReadHeader(input);
                break;
            case BlockKind.Checkpoint:
                CheckpointDecoder.ReadSequence(input);
                break;
        }
    }

    protected override IEnumerable<Seed> BuildCorpus()
    {
        Field[] settingsFields =
        [
            .. TreeCorpus.BlockFields.Take(3),
            new(15, 4, FieldKind.Int, "premeld threads"),
            new(19, 4, FieldKind.Int, "distance"),
            new(24, 4, FieldKind.Int, "block size"),
            new(28, 4, FieldKind.Int, "state window"),
        ];
        foreach (var settings in new[]
        {
            new ClusterSettings(),
            new ClusterSettings { PremeldThreads = 2, Distance = 4, GroupMeld = true, BlockSize = 1024, StateWindow = 64 },
            new ClusterSettings { PremeldThreads = 1, Distance = 1, BlockSize = 256, StateWindow = 16 },
        })
        {
            yield return new Seed($"settings {settings}", Blocks.Control(ControlKind.Settings, settings.Encode()), settingsFields);
        }

        yield return new Seed("filler", Blocks.Control(ControlKind.Filler, []), TreeCorpus.BlockFields.Take(3).ToArray());
        var id = new byte[8];
        BinaryPrimitives.WriteUInt64LittleEndian(id, 0x0123_4567_89AB_CDEF);
        yield return new Seed("checkpoint marker", Blocks.Control(ControlKind.CheckpointMarker, id), TreeCorpus.BlockFields.Take(3).ToArray());
        yield return new Seed("checkpoint marker without id", Blocks.Control(ControlKind.CheckpointMarker, []), TreeCorpus.BlockFields.Take(3).ToArray());
        var corpus = TreeCorpus.Shared;
        yield return new Seed("intention final block", corpus.Intentions[0].Final, TreeCorpus.BlockFields);
        yield return new Seed("checkpoint final block", corpus.Checkpoints[0].Final, TreeCorpus.BlockFields);
    }
}
