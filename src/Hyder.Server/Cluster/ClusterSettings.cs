using System.Buffers.Binary;
using Hyder.Doppel;
using Hyder.Tree.Pipeline;

namespace Hyder.Server.Cluster;

/// <summary>
/// What every server of a cluster must agree on, because it changes what meld computes (DESIGN §6):
/// the pipeline's t, d and group meld, the intention block size, and how far behind the log a
/// transaction's snapshot may lie. The first record of the log states them; a server whose own
/// settings differ refuses to start.
/// </summary>
public sealed record ClusterSettings
{
    /// <summary>t: premeld threads (0: premeld off).</summary>
    public int PremeldThreads { get; init; }

    /// <summary>d: the premeld distance.</summary>
    public int Distance { get; init; }

    /// <summary>Group meld on.</summary>
    public bool GroupMeld { get; init; }

    /// <summary>Intention block size, bytes (at most the log's block size).</summary>
    public int BlockSize { get; init; } = 8192;

    /// <summary>
    /// W: an intention whose snapshot is more than W ordinals behind it aborts on every server
    /// (AbortCause.SnapshotTooOld); each server keeps the last W states to decode
    /// intentions against.
    /// </summary>
    public int StateWindow { get; init; } = 1 << 14;

    /// <summary>
    /// The Doppel module (docs/doppel.md): true runs Add, Max, Min, OPut and TopKInsert as
    /// commutative operations; false (the module off) runs the same calls as ordinary
    /// read-modify-writes, for a side-by-side measure.
    /// </summary>
    public bool CommutativeOperations { get; init; } = true;

    /// <summary>Split phases: N ordinals per phase (0: off). Needs <see cref="CommutativeOperations"/>.</summary>
    public int SplitPhaseLength { get; init; }

    /// <summary>Operations on a key in a phase that make it split in the next.</summary>
    public int HotThreshold { get; init; } = 64;

    /// <summary>At most this many keys split by count in a phase.</summary>
    public int MaxSplitKeys { get; init; } = 16;

    /// <summary>Keys labelled hot (split in every phase): comma-separated hex, or empty.</summary>
    public string HotKeys { get; init; } = "";

    /// <summary>The pipeline options these settings mean.</summary>
    public PipelineOptions Pipeline => new(PremeldThreads, Distance, GroupMeld);

    /// <summary>The split-phase options these settings mean (<see cref="SplitPhaseOptions.Enabled"/> false when off).</summary>
    public SplitPhaseOptions SplitPhases => new()
    {
        PhaseLength = SplitPhaseLength,
        HotThreshold = HotThreshold,
        MaxSplitKeys = MaxSplitKeys,
        LabelledKeys = ParseHotKeys(HotKeys),
    };

    /// <summary>Parses comma-separated hex keys; throws <see cref="ArgumentException"/> naming the bad one.</summary>
    public static IReadOnlyList<byte[]> ParseHotKeys(string text)
    {
        var keys = new List<byte[]>();
        foreach (var part in text.Split(',', StringSplitOptions.RemoveEmptyEntries | StringSplitOptions.TrimEntries))
        {
            try
            {
                keys.Add(Convert.FromHexString(part));
            }
            catch (FormatException)
            {
                throw new ArgumentException($"hot key '{part}' is not hexadecimal bytes", nameof(text));
            }
        }

        return keys;
    }

    private const byte Version = 2;

    /// <summary>Checks the settings; throws <see cref="ArgumentException"/> naming the bad one.</summary>
    public void Validate()
    {
        Pipeline.Validate();
        ArgumentOutOfRangeException.ThrowIfLessThan(BlockSize, 256, nameof(BlockSize));
        ArgumentOutOfRangeException.ThrowIfLessThan(StateWindow, 16, nameof(StateWindow));
        SplitPhases.Validate();
        if (SplitPhaseLength > 0 && !CommutativeOperations)
        {
            throw new ArgumentException("split phases need commutative operations on", nameof(SplitPhaseLength));
        }
    }

    /// <summary>The settings as the control record's payload.</summary>
    public byte[] Encode()
    {
        var hot = System.Text.Encoding.ASCII.GetBytes(HotKeys);
        var b = new byte[V1Length + 1 + 4 + 4 + 4 + 4 + hot.Length];
        b[0] = Version;
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(1), PremeldThreads);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(5), Distance);
        b[9] = GroupMeld ? (byte)1 : (byte)0;
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(10), BlockSize);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(14), StateWindow);
        b[18] = CommutativeOperations ? (byte)1 : (byte)0;
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(19), SplitPhaseLength);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(23), HotThreshold);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(27), MaxSplitKeys);
        BinaryPrimitives.WriteInt32LittleEndian(b.AsSpan(31), hot.Length);
        hot.CopyTo(b.AsSpan(35));
        return b;
    }

    /// <summary>Version 1: the pipeline, block size and state window (logs written before the Doppel settings).</summary>
    private const int V1Length = 18;

    /// <summary>Reads settings written by <see cref="Encode"/>; throws <see cref="FormatException"/> for anything else.</summary>
    public static ClusterSettings Decode(ReadOnlySpan<byte> b)
    {
        var v1 = b.Length == V1Length && b[0] == 1;
        var v2 = b.Length >= V1Length + 17 && b[0] == Version && b[18] <= 1
            && BinaryPrimitives.ReadInt32LittleEndian(b[31..]) == b.Length - (V1Length + 17);
        if (!(v1 || v2) || b[9] > 1)
        {
            throw new FormatException($"cluster settings record of {b.Length} bytes, version {(b.Length > 0 ? b[0] : -1)}: not a settings record this server understands");
        }

        var s = new ClusterSettings
        {
            PremeldThreads = BinaryPrimitives.ReadInt32LittleEndian(b[1..]),
            Distance = BinaryPrimitives.ReadInt32LittleEndian(b[5..]),
            GroupMeld = b[9] == 1,
            BlockSize = BinaryPrimitives.ReadInt32LittleEndian(b[10..]),
            StateWindow = BinaryPrimitives.ReadInt32LittleEndian(b[14..]),
        };
        if (v2)
        {
            var hot = b[35..];
            foreach (var c in hot)
            {
                if (c is not ((>= (byte)'0' and <= (byte)'9') or (>= (byte)'a' and <= (byte)'f') or (>= (byte)'A' and <= (byte)'F') or (byte)','))
                {
                    throw new FormatException("cluster settings record: the hot keys are not comma-separated hex");
                }
            }

            s = s with
            {
                CommutativeOperations = b[18] == 1,
                SplitPhaseLength = BinaryPrimitives.ReadInt32LittleEndian(b[19..]),
                HotThreshold = BinaryPrimitives.ReadInt32LittleEndian(b[23..]),
                MaxSplitKeys = BinaryPrimitives.ReadInt32LittleEndian(b[27..]),
                HotKeys = System.Text.Encoding.ASCII.GetString(hot),
            };
        }

        try
        {
            s.Validate();
        }
        catch (ArgumentException e)
        {
            throw new FormatException($"cluster settings record holds invalid settings: {e.Message}", e);
        }

        return s;
    }

    /// <inheritdoc/>
    public override string ToString() =>
        $"{Pipeline}, block {BlockSize} B, state window {StateWindow}, "
        + (!CommutativeOperations ? "commutative operations off (read-modify-writes)"
            : SplitPhaseLength == 0 ? "commutative operations on, no split phases"
            : $"split phases of {SplitPhaseLength} ordinals (hot at {HotThreshold} operations, at most {MaxSplitKeys} keys{(HotKeys.Length > 0 ? ", labelled " + HotKeys : "")})");
}

/// <summary>Why a server refused to start.</summary>
public sealed class ServerStartException(string message, Exception? inner = null) : Exception(message, inner);
