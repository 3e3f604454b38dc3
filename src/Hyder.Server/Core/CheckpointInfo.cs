using System.Buffers.Binary;
using Hyder.Tree.Pipeline;

namespace Hyder.Server.Core;

/// <summary>
/// What a checkpoint says besides the tree: where a restarted server picks up, so that it
/// computes exactly what its peers compute from there (DESIGN §12, last trap).
/// </summary>
/// <param name="Barrier">The barrier ordinal: the checkpoint is the state after it.</param>
/// <param name="StateSequence">That state's sequence (its last committed ordinal).</param>
/// <param name="ResumePosition">The log position after the barrier's block: reading resumes here with ordinal Barrier + 1.</param>
/// <param name="Sequences">Every stage thread's next ephemeral sequence at the barrier.</param>
internal sealed record CheckpointInfo(long Barrier, long StateSequence, long ResumePosition, StageSequences Sequences)
{
    private const byte Version = 1;

    public byte[] Encode()
    {
        var t = Sequences.Premeld.Length;
        var b = new byte[1 + (8 * 5) + 4 + (8 * t)];
        b[0] = Version;
        var s = b.AsSpan(1);
        BinaryPrimitives.WriteInt64LittleEndian(s, Barrier);
        BinaryPrimitives.WriteInt64LittleEndian(s[8..], StateSequence);
        BinaryPrimitives.WriteInt64LittleEndian(s[16..], ResumePosition);
        BinaryPrimitives.WriteInt64LittleEndian(s[24..], Sequences.FinalMeld);
        BinaryPrimitives.WriteInt64LittleEndian(s[32..], Sequences.Group);
        BinaryPrimitives.WriteInt32LittleEndian(s[40..], t);
        for (var i = 0; i < t; i++)
        {
            BinaryPrimitives.WriteInt64LittleEndian(s[(44 + (8 * i))..], Sequences.Premeld[i]);
        }

        return b;
    }

    public static CheckpointInfo Decode(ReadOnlySpan<byte> b)
    {
        if (b.Length < 45 || b[0] != Version)
        {
            throw new FormatException($"checkpoint metadata of {b.Length} bytes is not version {Version}");
        }

        var s = b[1..];
        var t = BinaryPrimitives.ReadInt32LittleEndian(s[40..]);
        if (t < 0 || t > 253 || s.Length != 44 + (8 * t))
        {
            throw new FormatException($"checkpoint metadata names {t} premeld threads in {b.Length} bytes");
        }

        var premeld = new long[t];
        for (var i = 0; i < t; i++)
        {
            premeld[i] = BinaryPrimitives.ReadInt64LittleEndian(s[(44 + (8 * i))..]);
        }

        var info = new CheckpointInfo(
            BinaryPrimitives.ReadInt64LittleEndian(s),
            BinaryPrimitives.ReadInt64LittleEndian(s[8..]),
            BinaryPrimitives.ReadInt64LittleEndian(s[16..]),
            new StageSequences(BinaryPrimitives.ReadInt64LittleEndian(s[24..]), premeld, BinaryPrimitives.ReadInt64LittleEndian(s[32..])));
        if (info.Barrier < 1 || info.StateSequence < 0 || info.StateSequence > info.Barrier || info.ResumePosition < 1)
        {
            throw new FormatException($"checkpoint metadata is inconsistent: {info}");
        }

        return info;
    }
}
