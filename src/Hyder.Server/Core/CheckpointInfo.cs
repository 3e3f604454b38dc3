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
    /// <summary>3 adds the cluster settings (a log trimmed past its settings record still states them).</summary>
    private const byte Version = 3;

    /// <summary>The most split keys a checkpoint names, and the longest one.</summary>
    private const int MaxSplitKeys = 4096, MaxSplitKeyBytes = 1 << 16;

    /// <summary>
    /// With split phases on, the keys split in the phase that starts after the barrier (the barrier
    /// ends a phase: docs/doppel.md), so a restarted server splits the same keys as its peers.
    /// </summary>
    public IReadOnlyList<byte[]> SplitKeys { get; init; } = [];

    /// <summary>The cluster settings record's body (version 3): what a server checks its settings against once the log's first record is trimmed.</summary>
    public byte[]? Settings { get; init; }

    public byte[] Encode()
    {
        var t = Sequences.Premeld.Length;
        var keys = 4;
        foreach (var k in SplitKeys)
        {
            keys += 4 + k.Length;
        }

        var settings = Settings ?? [];
        var b = new byte[1 + (8 * 5) + 4 + (8 * t) + keys + 4 + settings.Length];
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

        var at = s[(44 + (8 * t))..];
        BinaryPrimitives.WriteInt32LittleEndian(at, SplitKeys.Count);
        at = at[4..];
        foreach (var k in SplitKeys)
        {
            BinaryPrimitives.WriteInt32LittleEndian(at, k.Length);
            k.CopyTo(at[4..]);
            at = at[(4 + k.Length)..];
        }

        BinaryPrimitives.WriteInt32LittleEndian(at, settings.Length);
        settings.CopyTo(at[4..]);
        return b;
    }

    public static CheckpointInfo Decode(ReadOnlySpan<byte> b)
    {
        if (b.Length < 45 || b[0] is not (1 or 2 or Version))
        {
            throw new FormatException($"checkpoint metadata of {b.Length} bytes is not version 1 to {Version}");
        }

        var s = b[1..];
        var t = BinaryPrimitives.ReadInt32LittleEndian(s[40..]);
        var fixedLength = 44L + (8L * t);
        if (t < 0 || t > 253 || (b[0] == 1 ? s.Length != fixedLength : s.Length < fixedLength + 4))
        {
            throw new FormatException($"checkpoint metadata names {t} premeld threads in {b.Length} bytes");
        }

        var splitKeys = new List<byte[]>();
        byte[]? settings = null;
        if (b[0] >= 2)
        {
            var at = s[(int)fixedLength..];
            var count = BinaryPrimitives.ReadInt32LittleEndian(at);
            at = at[4..];
            if (count is < 0 or > MaxSplitKeys)
            {
                throw new FormatException($"checkpoint metadata names {count} split keys (at most {MaxSplitKeys})");
            }

            for (var i = 0; i < count; i++)
            {
                var length = at.Length >= 4 ? BinaryPrimitives.ReadInt32LittleEndian(at) : -1;
                if (length is < 1 or > MaxSplitKeyBytes || at.Length < 4 + length)
                {
                    throw new FormatException($"checkpoint metadata: split key {i} of {count} is cut short or has an invalid length");
                }

                splitKeys.Add(at.Slice(4, length).ToArray());
                at = at[(4 + length)..];
            }

            if (b[0] >= 3)
            {
                var length = at.Length >= 4 ? BinaryPrimitives.ReadInt32LittleEndian(at) : -1;
                if (length < 0 || at.Length < 4 + length)
                {
                    throw new FormatException("checkpoint metadata: the cluster settings are cut short or have an invalid length");
                }

                settings = at.Slice(4, length).ToArray();
                at = at[(4 + length)..];
            }

            if (at.Length != 0)
            {
                throw new FormatException($"checkpoint metadata has {at.Length} bytes after its split keys");
            }
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
            new StageSequences(BinaryPrimitives.ReadInt64LittleEndian(s[24..]), premeld, BinaryPrimitives.ReadInt64LittleEndian(s[32..])))
        {
            SplitKeys = splitKeys,
            Settings = settings,
        };
        if (info.Barrier < 1 || info.StateSequence < 0 || info.StateSequence > info.Barrier || info.ResumePosition < 1)
        {
            throw new FormatException($"checkpoint metadata is inconsistent: {info}");
        }

        return info;
    }
}
